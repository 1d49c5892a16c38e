package txnrecovery.testdb;

import de.bwaldvogel.mongo.MongoCollection;
import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.aggregation.Aggregation;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.ErrorCode;
import de.bwaldvogel.mongo.exception.MongoServerError;
import io.netty.channel.Channel;
import java.util.List;
import java.util.Map;

/**
 * mongo-java-server's in-memory backend whose collections narrow the documents a query scans
 * (see {@link NarrowedCollection}) and whose non-unique indexes are {@link NarrowingIndex}es.
 * Results, errors and atomicity are the stock backend's.
 */
public final class NarrowedBackend extends MemoryBackend {
  private final NarrowingStats stats;

  /** {@code verify}: also run the stock scan for every narrowed query and compare. */
  public NarrowedBackend(boolean verify) {
    this.stats = new NarrowingStats(verify);
  }

  NarrowingStats stats() {
    return stats;
  }

  /**
   * An aggregation that starts with a {@code $match} of safe clauses ({@link FilterShape}): its
   * documents selected as a find selects them (narrowed), the rest of the pipeline run over
   * them as the stock server runs it. The stock server feeds every aggregation the whole
   * collection and matches in the pipeline: a driver's count (an aggregation) read every
   * document. Null for any other aggregation (the stock path): a first stage that is no such
   * {@code $match}, a change stream, one that writes ({@code $out}, {@code $merge}).
   */
  private Document narrowedAggregate(String databaseName, Document query) {
    List<Document> pipeline = Aggregation.parse(query.get("pipeline"));
    if (pipeline.isEmpty() || pipeline.get(0).size() != 1) return null;
    if (!(pipeline.get(0).get("$match") instanceof Document filter)) return null;
    for (Map.Entry<String, Object> clause : filter.entrySet()) {
      if (!FilterShape.safeClause(clause.getKey(), clause.getValue())) return null;
    }
    if (!(query.get("aggregate") instanceof String collectionName)) return null;
    MongoDatabase database = resolveDatabase(databaseName);
    if (!(database.resolveCollection(collectionName, false) instanceof NarrowedCollection collection)) {
      return null;
    }
    Aggregation rest =
        Aggregation.fromPipeline(
            pipeline.subList(1, pipeline.size()), this::resolveDatabase, database, collection, oplog);
    rest.validate(query);
    if (rest.isModifying()) return null;
    List<Document> result = rest.runStages(collection.matching(filter).stream());
    // As the stock server answers: every result in the first batch, no cursor left open.
    Document cursor = new Document("id", 0L);
    cursor.put("ns", databaseName + "." + collectionName);
    cursor.put("firstBatch", result);
    Document reply = new Document("cursor", cursor);
    Utils.markOkay(reply);
    return reply;
  }

  /**
   * Answers {@code explain} of a find, or of an aggregation whose first stage is a {@code
   * $match} (what a driver's count sends), with the work the narrowed scan does for its filter
   * ({@link NarrowedCollection#explain}); the stock server answers no explain at all. Every
   * other command is the stock server's.
   */
  @Override
  public Document handleCommand(
      Channel channel, String databaseName, String command, Document query) {
    if (command.equalsIgnoreCase("aggregate")) {
      Document narrowed = narrowedAggregate(databaseName, query);
      return narrowed != null ? narrowed : super.handleCommand(channel, databaseName, command, query);
    }
    if (!command.equalsIgnoreCase("explain")) {
      return super.handleCommand(channel, databaseName, command, query);
    }
    Object explained = query.get("explain");
    if (!(explained instanceof Document)) {
      throw new MongoServerError(ErrorCode.BadValue, "explain takes a command document");
    }
    Document inner = (Document) explained;
    String collection;
    Object filter;
    if (inner.get("find") instanceof String) {
      collection = (String) inner.get("find");
      filter = inner.get("filter");
    } else if (inner.get("aggregate") instanceof String
        && inner.get("pipeline") instanceof List<?> pipeline
        && !pipeline.isEmpty()
        && pipeline.get(0) instanceof Document first
        && first.size() == 1
        && first.containsKey("$match")) {
      collection = (String) inner.get("aggregate");
      filter = first.get("$match");
    } else {
      throw new MongoServerError(
          ErrorCode.CommandNotFound, "explain answers only find, or aggregate from $match");
    }
    if (filter != null && !(filter instanceof Document)) {
      throw new MongoServerError(ErrorCode.BadValue, "filter must be a document");
    }
    MongoCollection<?> found = resolveDatabase(databaseName).resolveCollection(collection, false);
    Document reply;
    if (found instanceof NarrowedCollection narrowed) {
      reply = narrowed.explain((Document) filter);
    } else {
      // No such collection: nothing to read.
      Document stats = new Document("nReturned", 0);
      stats.put("totalKeysExamined", 0);
      stats.put("totalDocsExamined", 0);
      stats.put("executionStages", new Document("stage", "EOF"));
      reply = new Document("executionStats", stats);
    }
    Utils.markOkay(reply);
    return reply;
  }

  @Override
  public MemoryDatabase openOrCreateDatabase(String databaseName) {
    return new Database(databaseName, getCursorRegistry(), stats);
  }

  private static final class Database extends MemoryDatabase {
    // Set after the super constructor, which already opens the system collections.
    private NarrowingStats stats;

    Database(String databaseName, CursorRegistry cursorRegistry, NarrowingStats stats) {
      super(databaseName, cursorRegistry);
      this.stats = stats;
    }

    @Override
    protected MemoryCollection openOrCreateCollection(
        String collectionName, CollectionOptions options) {
      if (stats == null) {
        // Called from the super constructor (system collections): stock collections.
        return super.openOrCreateCollection(collectionName, options);
      }
      return new NarrowedCollection(this, collectionName, options, cursorRegistry, stats);
    }

    @Override
    protected Index<Integer> openOrCreateSecondaryIndex(
        String collectionName, String indexName, List<IndexKey> keys, boolean sparse) {
      if (!NarrowingIndex.canIndex(keys)) {
        return super.openOrCreateSecondaryIndex(collectionName, indexName, keys, sparse);
      }
      return new NarrowingIndex(indexName, keys);
    }
  }
}
