package txnrecovery.testdb;

import de.bwaldvogel.mongo.bson.Document;
import java.util.concurrent.atomic.AtomicLong;

/** Counts of narrowed and stock queries; with verification, of comparisons and differences. */
final class NarrowingStats {
  private final boolean verify;
  private final AtomicLong narrowed = new AtomicLong();
  private final AtomicLong stock = new AtomicLong();
  private final AtomicLong verified = new AtomicLong();
  private final AtomicLong mismatches = new AtomicLong();

  NarrowingStats(boolean verify) {
    this.verify = verify;
  }

  boolean verify() {
    return verify;
  }

  void narrowed() {
    narrowed.incrementAndGet();
  }

  void stock() {
    stock.incrementAndGet();
  }

  void verified() {
    verified.incrementAndGet();
  }

  void mismatch(String collection, Document query, String detail) {
    mismatches.incrementAndGet();
    System.err.println("testdb: NARROWING MISMATCH on " + collection + " filter " + query + ": " + detail);
    System.err.flush();
  }

  long narrowedCount() {
    return narrowed.get();
  }

  long stockCount() {
    return stock.get();
  }

  long verifiedCount() {
    return verified.get();
  }

  long mismatchCount() {
    return mismatches.get();
  }

  String summary() {
    String text = "narrowed " + narrowed.get() + " queries, stock path " + stock.get();
    if (verify) text += ", verified " + verified.get() + ", mismatches " + mismatches.get();
    return text;
  }
}
