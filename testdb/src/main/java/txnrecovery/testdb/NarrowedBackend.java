package txnrecovery.testdb;

import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.backend.Index;
import de.bwaldvogel.mongo.backend.IndexKey;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
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
