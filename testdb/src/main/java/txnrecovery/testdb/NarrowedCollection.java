package txnrecovery.testdb;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.QueryResult;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.bson.Document;
import java.util.List;
import java.util.NavigableSet;

/**
 * A memory-backend collection whose queries look only at the documents a unique index or a
 * {@link NarrowingIndex} names for an equality, {@code $eq} or {@code $in} clause of the filter.
 *
 * <p>Every path that selects documents (find, count, distinct, update, delete, findAndModify)
 * goes through {@link #queryDocuments}. When the stock code would use an index itself (the
 * filter's keys are exactly an index's keys), or the filter has no narrowing clause (see {@link
 * FilterShape}), the stock method runs. Otherwise the candidates' positions are taken in storage
 * order (reversed for {@code $natural: -1}, like the stock scan) and handed to the stock matching
 * code, which applies the whole filter, the sort, skip, limit and projection exactly as for a
 * full scan. Since the candidates are a superset of the matching documents, in the same order,
 * the result is the stock result. All methods run under the collection's lock, as in the stock
 * collection.
 */
final class NarrowedCollection extends MemoryCollection {
  private final NarrowingStats stats;

  NarrowedCollection(
      MongoDatabase database,
      String collectionName,
      CollectionOptions options,
      CursorRegistry cursorRegistry,
      NarrowingStats stats) {
    super(database, collectionName, options, cursorRegistry);
    this.stats = stats;
  }

  @Override
  protected synchronized QueryResult queryDocuments(
      Document query,
      Document orderBy,
      int numberToSkip,
      int limit,
      int batchSize,
      Document fieldSelector) {
    NavigableSet<Integer> candidates = candidates(query);
    if (candidates == null) {
      stats.stock();
      return super.queryDocuments(query, orderBy, numberToSkip, limit, batchSize, fieldSelector);
    }
    // As the stock scan: $natural -1 walks the storage backwards (and a bad $natural throws).
    Iterable<Integer> positions =
        isNaturalDescending(orderBy) ? candidates.descendingSet() : candidates;
    if (stats.verify()) {
      verify(query, orderBy, numberToSkip, limit, fieldSelector, positions);
    }
    stats.narrowed();
    return matchDocuments(query, positions, orderBy, numberToSkip, limit, batchSize, fieldSelector);
  }

  /**
   * The positions of the candidates in storage order, or null when the stock path must run:
   * when an index handles the filter itself, or none narrows it ({@link CandidatePlanner}).
   */
  private NavigableSet<Integer> candidates(Document query) {
    if (query == null || query.isEmpty()) return null;
    List<Index<Integer>> indexes = getIndexes();
    for (Index<Integer> index : indexes) {
      if (index.canHandle(query)) return null; // the stock code uses that index itself
    }
    return new CandidatePlanner(indexes, getIdField()).candidates(query, count());
  }

  /** The documents matching {@code filter}, as a find selects them (narrowed where it can). */
  synchronized List<Document> matching(Document filter) {
    return queryDocuments(filter, null, 0, 0, 0, null).collectDocuments();
  }

  /**
   * The server's account of one read, as mongod's explain ("executionStats") gives it: the
   * documents the matcher examined (the candidates, or every document on the stock path), the
   * index entries the look-ups walked, and what matched. What the narrowing reads is what a
   * test of an idle sweep's cost must see grow when the work grows.
   */
  synchronized Document explain(Document query) {
    Document filter = query == null ? new Document() : query;
    String stage = "COLLSCAN";
    long keys = 0;
    long examined;
    Iterable<Integer> positions = null;
    Index<Integer> handling = null;
    for (Index<Integer> index : getIndexes()) {
      if (!filter.isEmpty() && index.canHandle(filter)) handling = index;
    }
    if (handling != null) {
      List<Integer> found = new java.util.ArrayList<>();
      for (Integer p : handling.getPositions(filter)) found.add(p);
      positions = found;
      examined = found.size();
      keys = examined;
      stage = "IXSCAN";
    } else {
      CandidatePlanner planner = new CandidatePlanner(getIndexes(), getIdField());
      NavigableSet<Integer> candidates =
          filter.isEmpty() ? null : planner.candidates(filter, count());
      if (candidates != null) {
        positions = candidates;
        examined = candidates.size();
        keys = planner.keysExamined();
        stage = "IXSCAN";
      } else {
        examined = count();
      }
    }
    long returned =
        positions == null
            ? super.queryDocuments(filter, null, 0, 0, 0, null).collectDocuments().size()
            : matchDocuments(filter, positions, null, 0, 0, 0, null).collectDocuments().size();
    Document stats = new Document("nReturned", returned);
    stats.put("totalKeysExamined", keys);
    stats.put("totalDocsExamined", examined);
    stats.put("executionStages", new Document("stage", stage).append("nReturned", returned));
    Document reply = new Document("queryPlanner", new Document("winningPlan", new Document("stage", stage)));
    reply.put("executionStats", stats);
    return reply;
  }

  /** TESTDB_NARROW_VERIFY: the stock scan must return the same documents, in the same order. */
  private void verify(
      Document query,
      Document orderBy,
      int numberToSkip,
      int limit,
      Document fieldSelector,
      Iterable<Integer> positions) {
    List<Document> expected;
    try {
      expected =
          super.queryDocuments(query, orderBy, numberToSkip, limit, 0, fieldSelector)
              .collectDocuments();
    } catch (RuntimeException stockError) {
      try {
        matchDocuments(query, positions, orderBy, numberToSkip, limit, 0, fieldSelector);
      } catch (RuntimeException narrowedError) {
        if (String.valueOf(stockError).equals(String.valueOf(narrowedError))) {
          stats.verified();
          return;
        }
      }
      stats.mismatch(getFullName(), query, "stock threw " + stockError);
      return;
    }
    List<Document> actual =
        matchDocuments(query, positions, orderBy, numberToSkip, limit, 0, fieldSelector)
            .collectDocuments();
    if (expected.equals(actual)) {
      stats.verified();
    } else {
      stats.mismatch(getFullName(), query, "stock " + expected + " narrowed " + actual);
    }
  }

  // ---- keeping the narrowing indexes in step with the storage ----

  /**
   * Under the collection's lock (the stock method is not): a NarrowingIndex built while another
   * thread inserts would miss that document. Lock order database, then collection, as in the
   * stock createIndexes.
   */
  @Override
  public synchronized void addIndex(Index<Integer> index) {
    super.addIndex(index);
  }

  @Override
  public synchronized void dropIndex(String indexName) {
    super.dropIndex(indexName);
  }

  @Override
  protected Integer addDocumentInternal(Document document) {
    Integer position = super.addDocumentInternal(document);
    for (Index<Integer> index : getIndexes()) {
      if (index instanceof NarrowingIndex) ((NarrowingIndex) index).put(document, position);
    }
    return position;
  }

  @Override
  protected void handleUpdate(Integer position, Document oldDocument, Document newDocument) {
    super.handleUpdate(position, oldDocument, newDocument);
    for (Index<Integer> index : getIndexes()) {
      if (index instanceof NarrowingIndex) ((NarrowingIndex) index).put(newDocument, position);
    }
  }

  @Override
  protected void removeDocument(Integer position) {
    for (Index<Integer> index : getIndexes()) {
      if (index instanceof NarrowingIndex) ((NarrowingIndex) index).remove(position);
    }
    super.removeDocument(position);
  }
}
