package txnrecovery.testdb;

import de.bwaldvogel.mongo.MongoCollection;
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
   * Answers {@code explain} of a find, or of an aggregation whose first stage is a {@code
   * $match} (what a driver's count sends), with the work the narrowed scan does for its filter
   * ({@link NarrowedCollection#explain}); the stock server answers no explain at all. Every
   * other command is the stock server's.
   */
  @Override
  public Document handleCommand(
      Channel channel, String databaseName, String command, Document query) {
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
