package txnrecovery.testdb;

import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.bson.BsonRegularExpression;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.bson.ObjectId;
import io.netty.channel.embedded.EmbeddedChannel;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Differential test of {@link NarrowedBackend} against mongo-java-server's stock {@link
 * MemoryBackend}: the same commands (named cases, then randomized ones from a fixed seed) go to
 * both backends in one JVM, through the same entry point the wire protocol handler uses
 * ({@code MongoBackend.handleCommand}); every response (or error) and, after every command, the
 * whole content of every collection in storage order and its indexes must be identical.
 *
 * <pre>
 * java -cp ... txnrecovery.testdb.DifferentialTest [--ops N] [--seed S]
 * </pre>
 *
 * <p>Exit status 0 when no difference was found and the narrowed backend did narrow (the test
 * also checks that the cases meant to be narrowed were, and the others were not); 1 otherwise.
 */
public final class DifferentialTest {
  private static final String DB = "difftest";
  private static final List<String> COLLECTIONS = List.of("txns", "plain");
  private static final List<String> STATES =
      List.of("pending", "applying", "applied", "done", "canceled");
  private static final int ID_SPACE = 60;
  private static final Pattern UUID_PATTERN =
      Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  private static final Pattern OBJECT_ID_PATTERN = Pattern.compile("\\b[0-9a-f]{24}\\b");

  /** One backend, with its own channel and its own numbering of ObjectIds it shows. */
  private static final class Side {
    final MongoBackend backend;
    final EmbeddedChannel channel = new EmbeddedChannel();
    final Map<ObjectId, Integer> objectIds = new HashMap<>();
    Document lastResponse;

    Side(MongoBackend backend) {
      this.backend = backend;
    }

    /** The canonical text of the command's response, or of the error it raised. */
    String run(String command, Document body) {
      lastResponse = null;
      try {
        lastResponse = backend.handleCommand(channel, DB, command, body.cloneDeeply());
        return canonical(lastResponse, false);
      } catch (RuntimeException e) {
        return "ERROR " + e.getClass().getName() + ": " + canonicalMessage(e.getMessage());
      }
    }

    /** Texts (errors) name collection UUIDs (random per backend) and ObjectIds. */
    private String canonicalMessage(String message) {
      if (message == null) return "null";
      String text = UUID_PATTERN.matcher(message).replaceAll("<uuid>");
      Matcher m = OBJECT_ID_PATTERN.matcher(text);
      StringBuilder out = new StringBuilder();
      while (m.find()) {
        m.appendReplacement(out, canonical(new ObjectId(m.group()), false));
      }
      m.appendTail(out);
      return out.toString();
    }

    long cursorId() {
      if (lastResponse == null || !(lastResponse.get("cursor") instanceof Document)) return 0;
      Object id = ((Document) lastResponse.get("cursor")).get("id");
      return id instanceof Number ? ((Number) id).longValue() : 0;
    }

    /** Values with their Java types; cursor ids only as "open"/0; ObjectIds by first use. */
    String canonical(Object value, boolean inCursor) {
      StringBuilder out = new StringBuilder();
      append(out, value, inCursor);
      return out.toString();
    }

    private void append(StringBuilder out, Object value, boolean inCursor) {
      if (value instanceof Document) {
        out.append('{');
        boolean first = true;
        for (Map.Entry<String, Object> e : ((Document) value).entrySet()) {
          if (!first) out.append(", ");
          first = false;
          out.append(e.getKey()).append(": ");
          if (inCursor && e.getKey().equals("id") && e.getValue() instanceof Number) {
            out.append(((Number) e.getValue()).longValue() == 0 ? "0" : "open");
          } else {
            append(out, e.getValue(), e.getKey().equals("cursor"));
          }
        }
        out.append('}');
      } else if (value instanceof Collection) {
        out.append('[');
        boolean first = true;
        for (Object element : (Collection<?>) value) {
          if (!first) out.append(", ");
          first = false;
          append(out, element, false);
        }
        out.append(']');
      } else if (value instanceof ObjectId) {
        Integer n = objectIds.computeIfAbsent((ObjectId) value, k -> objectIds.size() + 1);
        out.append("oid#").append(n);
      } else if (value instanceof String) {
        out.append('"').append(canonicalMessage((String) value)).append('"');
      } else if (value == null) {
        out.append("null");
      } else {
        out.append(value.getClass().getSimpleName()).append(':').append(value);
      }
    }
  }

  private final Side stock = new Side(new MemoryBackend());
  private final NarrowedBackend narrowedBackend = new NarrowedBackend(false);
  private final Side narrowed = new Side(narrowedBackend);
  private final Random random;
  private final List<ObjectId> objectIdPool = new ArrayList<>();
  private long operations;
  private long namedOperations;
  private long differences;
  private long expectationFailures;
  private String currentOperation = "";

  private DifferentialTest(long seed) {
    this.random = new Random(seed);
    for (int i = 0; i < 6; i++) {
      byte[] bytes = new byte[12];
      bytes[11] = (byte) (i + 1);
      bytes[0] = 0x65;
      objectIdPool.add(new ObjectId(bytes));
    }
  }

  public static void main(String[] args) {
    int ops = 20000;
    long seed = 20250614L;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--ops") && i + 1 < args.length) {
        ops = Integer.parseInt(args[++i]);
      } else if (args[i].equals("--seed") && i + 1 < args.length) {
        seed = Long.parseLong(args[++i]);
      } else {
        System.err.println("usage: DifferentialTest [--ops N] [--seed S]");
        System.exit(64);
      }
    }
    DifferentialTest test = new DifferentialTest(seed);
    test.namedCases();
    test.namedOperations = test.operations;
    test.randomized(ops);
    boolean atomic = test.concurrentCompareAndSet();
    NarrowingStats stats = test.narrowedBackend.stats();
    System.out.println(
        "differential: "
            + test.operations
            + " operations compared ("
            + test.namedOperations
            + " named, "
            + (test.operations - test.namedOperations)
            + " randomized, seed "
            + seed
            + "), "
            + test.differences
            + " differences; narrowed backend: "
            + stats.summary()
            + "; "
            + test.expectationFailures
            + " narrowing expectations failed");
    // Without narrowing the comparison would prove nothing: most random filters have a
    // narrowing clause.
    boolean exercised = stats.narrowedCount() >= test.operations / 10;
    if (!exercised) System.out.println("differential: FAIL: too few queries were narrowed");
    boolean ok = test.differences == 0 && test.expectationFailures == 0 && exercised && atomic;
    System.out.println(ok ? "differential: PASS" : "differential: FAIL");
    System.exit(ok ? 0 : 1);
  }

  // ---- comparison ----

  /** Runs the command on both backends and compares; drains cursors; compares the data. */
  private void both(String command, Document body) {
    operations++;
    currentOperation = command + " " + body;
    String a = stock.run(command, body);
    String b = narrowed.run(command, body);
    compare("response", a, b);
    drainCursors(body);
    compareContents();
  }

  private void drainCursors(Document body) {
    String collection = String.valueOf(body.get(body.keySet().iterator().next()));
    for (int guard = 0; guard < 1000; guard++) {
      long idA = stock.cursorId();
      long idB = narrowed.cursorId();
      if ((idA == 0) != (idB == 0)) {
        compare("cursor", "cursor " + (idA != 0), "cursor " + (idB != 0));
        return;
      }
      if (idA == 0) return;
      int batch = 1 + random.nextInt(3);
      String a = stock.run("getMore", getMore(idA, collection, batch));
      String b = narrowed.run("getMore", getMore(idB, collection, batch));
      compare("getMore", a, b);
    }
  }

  private static Document getMore(long id, String collection, int batchSize) {
    return new Document("getMore", id).append("collection", collection).append("batchSize", batchSize);
  }

  private void compareContents() {
    for (String collection : COLLECTIONS) {
      Document find =
          new Document("find", collection)
              .append("filter", new Document())
              .append("sort", new Document("$natural", 1));
      compare("content of " + collection, stock.run("find", find), narrowed.run("find", find));
      Document list = new Document("listIndexes", collection);
      compare("indexes of " + collection, stock.run("listIndexes", list), narrowed.run("listIndexes", list));
    }
  }

  private void compare(String what, String a, String b) {
    if (a.equals(b)) return;
    differences++;
    if (differences <= 10) {
      System.out.println("DIFFERENCE in " + what + " after operation " + operations + ": " + currentOperation);
      System.out.println("  stock:    " + abbreviate(a));
      System.out.println("  narrowed: " + abbreviate(b));
    }
  }

  private static String abbreviate(String s) {
    return s.length() <= 2000 ? s : s.substring(0, 2000) + "...";
  }

  /** Runs a find on both and checks whether the narrowed backend narrowed it. */
  private void expectNarrowed(boolean expected, Document filter) {
    long before = narrowedBackend.stats().narrowedCount();
    both("find", new Document("find", "txns").append("filter", filter));
    boolean was = narrowedBackend.stats().narrowedCount() > before;
    if (was != expected) {
      expectationFailures++;
      System.out.println(
          "EXPECTATION: filter " + filter + " was " + (was ? "" : "not ") + "narrowed");
    }
  }

  // ---- atomicity ----

  /**
   * Threads race the guarded write {_id: X, state: "pending"} -> "taken" on the same documents:
   * on each backend every document must be taken exactly once (one thread sees n = 1, the
   * others n = 0), as the synchronized collection methods guarantee. Not a comparison: the
   * winners differ from run to run.
   */
  private boolean concurrentCompareAndSet() {
    final int documents = 2000;
    final int threads = 4;
    boolean ok = true;
    for (Side side : List.of(stock, narrowed)) {
      List<Object> batch = new ArrayList<>();
      for (int i = 0; i < documents; i++) batch.add(doc("_id", i, "state", "pending", "marker", list(i % 7)));
      side.backend.handleCommand(side.channel, DB, "createIndexes",
          doc("createIndexes", "race", "indexes", list(doc("key", doc("state", 1), "name", "state_1"))));
      side.backend.handleCommand(side.channel, DB, "insert", doc("insert", "race", "documents", batch));
      java.util.concurrent.atomic.AtomicInteger wins = new java.util.concurrent.atomic.AtomicInteger();
      java.util.concurrent.atomic.AtomicInteger failures = new java.util.concurrent.atomic.AtomicInteger();
      List<Thread> racers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        final String owner = "t" + t;
        Thread thread = new Thread(() -> {
          EmbeddedChannel channel = new EmbeddedChannel();
          for (int i = 0; i < documents; i++) {
            try {
              Document q = doc("_id", i, "state", "pending");
              Document u = doc("$set", doc("state", "taken", "owner", owner));
              Document r = side.backend.handleCommand(channel, DB, "update",
                  doc("update", "race", "updates", list(doc("q", q, "u", u))));
              wins.addAndGet(((Number) r.get("n")).intValue());
            } catch (RuntimeException e) {
              failures.incrementAndGet();
            }
          }
        });
        racers.add(thread);
        thread.start();
      }
      for (Thread thread : racers) {
        try {
          thread.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      Document count = side.backend.handleCommand(side.channel, DB, "count",
          doc("count", "race", "query", doc("state", "taken")));
      int taken = ((Number) count.get("n")).intValue();
      boolean sideOk = wins.get() == documents && taken == documents && failures.get() == 0;
      System.out.println("differential: concurrent compare-and-set on the "
          + (side == stock ? "stock" : "narrowed") + " backend: " + threads + " threads x "
          + documents + " guarded writes, " + wins.get() + " won, " + taken + " taken, "
          + failures.get() + " errors" + (sideOk ? "" : " FAIL"));
      ok &= sideOk;
    }
    return ok;
  }

  // ---- named cases ----

  private static Instant year(int year) {
    return ZonedDateTime.of(year, 1, 1, 0, 0, 0, 0, ZoneOffset.UTC).toInstant();
  }

  private static Document doc(Object... keyValues) {
    Document d = new Document();
    for (int i = 0; i < keyValues.length; i += 2) d.append((String) keyValues[i], keyValues[i + 1]);
    return d;
  }

  private static List<Object> list(Object... values) {
    return new ArrayList<>(List.of(values));
  }

  private void insert(String collection, boolean ordered, Document... documents) {
    both("insert", doc("insert", collection, "documents", list((Object[]) documents), "ordered", ordered));
  }

  private void update(String collection, Document q, Document u, boolean multi, boolean upsert) {
    both("update", doc("update", collection, "updates", list(doc("q", q, "u", u, "multi", multi, "upsert", upsert)), "ordered", true));
  }

  private void createIndex(String collection, Document key, String name, boolean unique, boolean sparse) {
    Document index = doc("key", key, "name", name);
    if (unique) index.append("unique", true);
    if (sparse) index.append("sparse", true);
    both("createIndexes", doc("createIndexes", collection, "indexes", list(index)));
  }

  private void namedCases() {
    // Indexes as the daemon creates them, before and after data.
    createIndex("txns", doc("state", 1, "lastModified", 1), "state_1_lastModified_1", false, false);
    insert("txns", true,
        doc("_id", 1, "state", "pending", "lastModified", year(2001), "marker", list(7, 8), "amount", 10),
        doc("_id", 2, "state", "pending", "lastModified", year(2150), "marker", 7, "amount", 5.5),
        doc("_id", 3, "state", "applied", "lastModified", year(2002), "marker", list(), "name", "alpha"),
        doc("_id", 4L, "state", list("pending", "x"), "marker", list(list(9), 3), "sub", doc("a", 1, "b", list(1, 2))),
        doc("_id", "s5", "state", null, "name", "Beta", "sub", list(doc("a", 2), doc("a", 3))),
        doc("_id", objectIdPool.get(0), "state", "done", "marker", "m1", "code", "c1"),
        doc("_id", 7.0, "state", "pending", "marker", list(7), "code", list("c2", "c3")),
        doc("_id", 8, "state", "pending", "code", list(list("c4"))));
    createIndex("txns", doc("marker", 1), "marker_1", false, false);
    createIndex("txns", doc("sub.a", 1), "sub.a_1", false, false);
    createIndex("txns", doc("code", 1), "code_1", true, true);
    insert("plain", false, doc("_id", 1, "state", "pending"), doc("_id", 2, "state", "done"));

    // Guarded writes as the engine issues them: narrowed by _id, the rest filtered.
    expectNarrowed(true, doc("_id", 1, "state", "pending"));
    expectNarrowed(true, doc("_id", 1L, "state", "pending"));
    expectNarrowed(true, doc("_id", 7, "state", "pending")); // 7 == 7.0
    expectNarrowed(true, doc("_id", 4, "state", "pending")); // array state contains
    expectNarrowed(true, doc("state", "pending", "_id", 2));
    expectNarrowed(true, doc("_id", doc("$eq", 3), "state", doc("$ne", "pending")));
    expectNarrowed(true, doc("_id", doc("$in", list(1, 2, 3, 99)), "state", "pending"));
    expectNarrowed(true, doc("_id", doc("$in", list()), "state", "pending"));
    expectNarrowed(true, doc("$and", list(doc("_id", 1), doc("state", "pending"))));
    expectNarrowed(true, doc("$and", list(doc("state", "pending"), doc("lastModified", doc("$lt", year(2100))))));
    expectNarrowed(true, doc("state", "pending", "lastModified", doc("$lt", year(2100))));
    expectNarrowed(true, doc("state", doc("$in", list("pending", "applied")), "amount", doc("$gt", 1)));
    expectNarrowed(true, doc("marker", 7, "state", "pending"));
    expectNarrowed(true, doc("marker", 9, "state", doc("$exists", true))); // nested array, $in-free
    expectNarrowed(true, doc("marker", doc("$in", list(9)), "state", doc("$exists", true)));
    expectNarrowed(true, doc("marker", 3, "sub.b", 2));
    expectNarrowed(true, doc("code", "c2", "state", "pending")); // unique index on an array field
    // $in looks into nested arrays; a unique index does not list "c4": narrowed by state only.
    expectNarrowed(true, doc("code", doc("$in", list("c4")), "state", "pending"));
    expectNarrowed(false, doc("code", doc("$in", list("c4")), "state", doc("$ne", "x")));
    expectNarrowed(true, doc("_id", 2, "$expr", doc("$lt", list("$lastModified", "$$NOW"))));
    expectNarrowed(true, doc("_id", 1, "state", doc("$bogus", 1))); // error raised after _id
    expectNarrowed(true, doc("_id", 99, "state", doc("$bogus", 1))); // no candidate: no error
    expectNarrowed(true, doc("state", "pending", "marker", doc("$exists", true, "$not", doc("$type", "array"))));
    expectNarrowed(true, doc("state", "pending", "name", new BsonRegularExpression("^a", "i")));
    expectNarrowed(true, doc("_id", 3, "$comment", "guarded"));
    // What an idle sweep sends: each alternative of an $or narrowed, a compound index's ranges,
    // the complement of known states, presence of a (dotted) key.
    expectNarrowed(true, doc("$or", list(doc("_id", 1), doc("_id", 2))));
    expectNarrowed(true, doc("state", doc("$nin", list("pending", "applied", "done"))));
    expectNarrowed(true, doc("state", doc("$nin", list("pending", "x")), "name", doc("$exists", true)));
    expectNarrowed(true, doc("state", doc("$in", list("done", "pending")), "lastModified", doc("$gte", year(2000), "$lt", year(2003))));
    expectNarrowed(true, doc("state", "pending", "lastModified", doc("$gte", year(2100))));
    expectNarrowed(true, doc("state", "pending", "lastModified", doc("$lte", year(2001))));
    expectNarrowed(true, doc("state", doc("$in", list("pending", "done")), "lastModified", doc("$exists", false)));
    expectNarrowed(true, doc("state", "x", "lastModified", doc("$exists", false)));
    expectNarrowed(true, doc("state", "pending", "lastModified", year(2150)));
    expectNarrowed(true, doc("marker", doc("$exists", true, "$ne", list())));
    expectNarrowed(true, doc("marker", doc("$exists", true)));
    expectNarrowed(true, doc("state", doc("$gt", "e", "$lt", "f")));
    expectNarrowed(true, doc("state", doc("$lt", "done")));
    expectNarrowed(true, doc("state", doc("$gt", "done")));
    expectNarrowed(true, doc("state", null));
    expectNarrowed(true, doc("state", doc("$type", "number")));
    expectNarrowed(true, doc("amount", doc("$gt", 1), "state", doc("$type", "object")));
    expectNarrowed(true, doc("marker", doc("$gte", 3, "$lt", 9L)));
    expectNarrowed(true, doc("sub.a", doc("$exists", true)));
    expectNarrowed(true, doc("lastModified", doc("$exists", false), "$or", list(
        doc("state", "pending", "lastModified", doc("$lt", year(2100))),
        doc("state", doc("$in", list("done")), "lastModified", doc("$gte", year(2001), "$lt", year(2200))),
        doc("state", doc("$nin", list("pending", "applied", "done"))))));
    // The stock path: an index handles the filter itself, no narrowing clause, or an unsafe
    // clause comes first.
    expectNarrowed(false, doc("_id", 1));
    expectNarrowed(false, doc("_id", doc("$in", list(1, 2))));
    expectNarrowed(false, doc("_id", doc("$gt", 0), "code", doc("$in", list("c1", "c2")), "marker", list(7)));
    expectNarrowed(false, doc("state", doc("$bogus", 1), "_id", 1)); // error before _id
    expectNarrowed(false, doc("state", doc("$bogus", 1), "_id", 99)); // raised, no candidate
    expectNarrowed(false, doc("amount", doc("$mod", list(0, 0)), "_id", 1)); // raised on numbers
    expectNarrowed(false, doc("$expr", doc("$lt", list("$lastModified", "$$NOW")), "_id", 2));
    expectNarrowed(false, doc("sub.a", 1, "state", doc("$ne", "x")));
    expectNarrowed(false, doc("$or", list(doc("_id", 1), doc("amount", 5.5))));
    expectNarrowed(false, doc("state", doc("$nin", list("pending", new BsonRegularExpression("^a", "")))));
    expectNarrowed(true, doc("state", doc("$exists", false)));
    expectNarrowed(true, doc("state", doc("$type", "null")));
    expectNarrowed(true, doc("state", doc("$in", list("pending", "applied")), "lastModified", doc("$type", "date")));
    both("aggregate", doc("aggregate", "txns", "pipeline", list(doc("$match", doc("state", doc("$nin", list("x")))), doc("$group", doc("_id", 1, "n", doc("$sum", 1)))), "cursor", doc()));
    both("aggregate", doc("aggregate", "txns", "pipeline", list(doc("$match", doc("lastModified", doc("$exists", false))), doc("$count", "n")), "cursor", doc()));
    expectNarrowed(false, doc("state", doc("$type", "array")));
    expectNarrowed(false, doc("state", doc("$type", "string")));
    expectNarrowed(true, doc("state", null, "marker", doc("$size", 0)));
    expectNarrowed(false, doc("name", doc("$regex", "("), "_id", 3));
    expectNarrowed(false, doc("marker", doc("$elemMatch", doc("$gt", 7)), "_id", 1));

    // The same with sort, skip, limit, projection, $natural and batches.
    Document pendingFilter = doc("state", "pending", "lastModified", doc("$lt", year(2200)));
    both("find", doc("find", "txns", "filter", pendingFilter, "sort", doc("amount", -1), "skip", 1, "limit", 2, "projection", doc("marker", 1)));
    both("find", doc("find", "txns", "filter", pendingFilter, "sort", doc("$natural", -1), "batchSize", 1));
    both("find", doc("find", "txns", "filter", pendingFilter, "sort", doc("$natural", 2)));
    both("find", doc("find", "txns", "filter", doc("marker", 7), "projection", doc("_id", 0, "state", 1), "batchSize", 1));
    both("count", doc("count", "txns", "query", doc("state", "pending", "marker", 7)));
    both("count", doc("count", "txns", "query", pendingFilter, "skip", 1, "limit", 1));
    both("distinct", doc("distinct", "txns", "key", "marker", "query", doc("state", "pending")));
    both("aggregate", doc("aggregate", "txns", "pipeline", list(doc("$match", doc("state", "pending"))), "cursor", doc()));

    // Guarded updates, update_many, upserts, positional updates, errors.
    update("txns", doc("_id", 1, "state", "pending"), doc("$set", doc("state", "applying")), false, false);
    update("txns", doc("_id", 1, "state", "pending"), doc("$set", doc("state", "applied")), false, false); // no match now
    update("txns", doc("state", "pending", "marker", 7), doc("$set", doc("marker.$", 70)), true, false);
    update("txns", doc("state", "pending"), doc("$inc", doc("amount", 1)), true, false);
    update("txns", doc("_id", 50, "state", "pending"), doc("$set", doc("amount", 1)), false, true); // upsert by _id
    update("txns", doc("state", "new", "marker", 11), doc("$set", doc("amount", 2)), false, true); // generated _id
    // Generated ObjectIds are random, each backend its own: gone before anything sorts by _id.
    both("delete", doc("delete", "txns", "deletes", list(doc("q", doc("state", "new", "marker", 11), "limit", 0))));
    update("txns", doc("_id", 3, "state", "applied"), doc("$set", doc("_id", 30)), false, false); // immutable _id
    update("txns", doc("_id", 2, "state", "pending"), doc("$set", doc("code", "c1")), false, false); // duplicate key
    update("txns", doc("_id", 2, "state", "pending"), doc("state", "applied", "marker", list(5)), false, false); // replacement
    insert("txns", true, doc("_id", 1, "state", "pending")); // duplicate _id, ordered
    insert("txns", false, doc("_id", 60, "state", "pending", "code", "c1"), doc("_id", 61, "state", "pending", "marker", 7)); // unordered
    // Bulk writes: several updates in one command, ordered and not.
    both("update", doc("update", "txns", "ordered", false, "updates", list(
        doc("q", doc("_id", 61, "state", "pending"), "u", doc("$set", doc("state", "applied"))),
        doc("q", doc("_id", 60, "state", "pending"), "u", doc("$set", doc("code", "c2"))),
        doc("q", doc("marker", 7, "state", "pending"), "u", doc("$push", doc("marker", 12)), "multi", true),
        doc("q", doc("_id", 62, "state", "pending"), "u", doc("$set", doc("state", "done")), "upsert", true))));
    // findAndModify: before/after image, sort, fields, remove, upsert, no match.
    both("findAndModify", doc("findAndModify", "txns", "query", doc("_id", 2, "state", "applied"), "update", doc("$set", doc("state", "done")), "new", false));
    both("findAndModify", doc("findAndModify", "txns", "query", doc("state", "done", "marker", doc("$exists", true)), "update", doc("$set", doc("state", "archived")), "new", true, "sort", doc("_id", -1), "fields", doc("state", 1)));
    both("findAndModify", doc("findAndModify", "txns", "query", doc("_id", 77, "state", "pending"), "update", doc("$set", doc("amount", 3)), "upsert", true, "new", true));
    both("findAndModify", doc("findAndModify", "txns", "query", doc("_id", 78, "state", "pending"), "update", doc("$set", doc("amount", 3))));
    both("findAndModify", doc("findAndModify", "txns", "query", doc("_id", 77, "state", "pending"), "remove", true));
    both("findAndModify", doc("findAndModify", "txns", "query", doc("_id", 1, "state", doc("$bogus", 1)), "remove", true));
    // Deletes, then the index dropped and rebuilt over existing documents.
    both("delete", doc("delete", "txns", "deletes", list(doc("q", doc("state", "applied", "marker", 5), "limit", 1))));
    both("delete", doc("delete", "txns", "deletes", list(doc("q", doc("state", "pending", "amount", doc("$gt", 0)), "limit", 0), doc("q", doc("_id", 3, "state", "applied"), "limit", 1))));
    both("dropIndexes", doc("dropIndexes", "txns", "index", "marker_1"));
    expectNarrowed(false, doc("marker", 7, "state", doc("$ne", "x")));
    createIndex("txns", doc("marker", 1), "marker_1", false, false);
    expectNarrowed(true, doc("marker", 7, "state", doc("$ne", "x")));
    both("validate", doc("validate", "txns"));
    both("collStats", doc("collStats", "txns"));
  }

  // ---- randomized operations ----

  private void randomized(int count) {
    for (int i = 0; i < count; i++) {
      int pick = random.nextInt(100);
      String collection = random.nextInt(5) == 0 ? "plain" : "txns";
      if (pick < 22) {
        Document find = doc("find", collection, "filter", filter(2));
        if (random.nextInt(3) == 0) find.append("sort", sort());
        if (random.nextInt(4) == 0) find.append("skip", random.nextInt(3));
        if (random.nextInt(4) == 0) find.append("limit", random.nextInt(4));
        if (random.nextInt(4) == 0) find.append("projection", projection());
        if (random.nextInt(4) == 0) find.append("batchSize", 1 + random.nextInt(3));
        both("find", find);
      } else if (pick < 28) {
        Document count2 = doc("count", collection, "query", filter(2));
        if (random.nextInt(4) == 0) count2.append("skip", random.nextInt(3));
        if (random.nextInt(4) == 0) count2.append("limit", random.nextInt(3));
        both("count", count2);
      } else if (pick < 32) {
        String key = List.of("state", "marker", "amount", "sub.a").get(random.nextInt(4));
        both("distinct", doc("distinct", collection, "key", key, "query", filter(2)));
      } else if (pick < 52) {
        int n = random.nextInt(6) == 0 ? 2 + random.nextInt(3) : 1;
        List<Object> updates = new ArrayList<>();
        for (int j = 0; j < n; j++) {
          Document u = doc("q", filter(2), "u", updateSpec());
          if (random.nextInt(4) == 0) u.append("multi", true);
          if (random.nextInt(6) == 0) u.append("upsert", true).put("q", upsertFilter((Document) u.get("q")));
          updates.add(u);
        }
        both("update", doc("update", collection, "updates", updates, "ordered", random.nextBoolean()));
      } else if (pick < 62) {
        int n = 1 + random.nextInt(3);
        List<Object> documents = new ArrayList<>();
        for (int j = 0; j < n; j++) documents.add(randomDocument());
        both("insert", doc("insert", collection, "documents", documents, "ordered", random.nextBoolean()));
      } else if (pick < 70) {
        List<Object> deletes = new ArrayList<>();
        int n = random.nextInt(5) == 0 ? 2 : 1;
        for (int j = 0; j < n; j++) deletes.add(doc("q", filter(2), "limit", random.nextInt(2)));
        both("delete", doc("delete", collection, "deletes", deletes));
      } else if (pick < 88) {
        Document fam = doc("findAndModify", collection, "query", filter(2));
        if (random.nextInt(4) == 0) {
          fam.append("remove", true);
        } else {
          fam.append("update", updateSpec());
          if (random.nextBoolean()) fam.append("new", true);
          if (random.nextInt(4) == 0) fam.append("upsert", true).put("query", upsertFilter(filter(2)));
        }
        if (random.nextInt(3) == 0) fam.append("sort", sort());
        if (random.nextInt(4) == 0) fam.append("fields", projection());
        both("findAndModify", fam);
      } else if (pick < 90) {
        indexChange(collection);
      } else {
        // The guarded write exactly as the engine sends it.
        Document q = doc("_id", idValue(), "state", state());
        if (random.nextBoolean()) q.append("lastModified", doc("$lt", time()));
        both("update", doc("update", collection, "updates", list(doc("q", q, "u", doc("$set", doc("state", state())))), "ordered", true));
      }
    }
  }

  /**
   * An upsert inserts the filter's top-level _id; without one the server would generate a random
   * ObjectId, different in each backend (which sorts differently).
   */
  private Document upsertFilter(Document filter) {
    filter.put("_id", idValue());
    return filter;
  }

  private void indexChange(String collection) {
    int pick = random.nextInt(5);
    if (pick == 0) {
      both("dropIndexes", doc("dropIndexes", collection, "index", "marker_1"));
    } else if (pick == 1) {
      both("dropIndexes", doc("dropIndexes", collection, "index", "state_1_lastModified_1"));
    } else if (pick == 2) {
      createIndex(collection, doc("marker", 1), "marker_1", false, false);
    } else if (pick == 3) {
      createIndex(collection, doc("state", 1, "lastModified", 1), "state_1_lastModified_1", false, false);
    } else {
      createIndex(collection, doc("code", 1), "code_1", true, random.nextBoolean());
    }
  }

  private Object pickFrom(List<?> values) {
    return values.get(random.nextInt(values.size()));
  }

  /** An _id as stored or queried: the same number in several types, strings, ObjectIds. */
  private Object idValue() {
    int k = random.nextInt(ID_SPACE);
    switch (random.nextInt(10)) {
      case 0:
        return (long) k;
      case 1:
        return (double) k;
      case 2:
        return "s" + k;
      case 3:
        return pickFrom(objectIdPool);
      default:
        return k;
    }
  }

  private Object state() {
    return random.nextInt(12) == 0 ? "other" : pickFrom(STATES);
  }

  private Object marker() {
    int k = random.nextInt(10);
    switch (random.nextInt(4)) {
      case 0:
        return "m" + k;
      case 1:
        return (long) k;
      default:
        return k;
    }
  }

  private Instant time() {
    return year(2000 + 5 * random.nextInt(21)); // 2000..2100, never this year ($$NOW)
  }

  private Document randomDocument() {
    Document d = new Document();
    d.append("_id", idValue()); // never generated: see upsertFilter
    int s = random.nextInt(20);
    if (s < 15) {
      d.append("state", state());
    } else if (s == 15) {
      d.append("state", null);
    } else if (s == 16) {
      d.append("state", list(state(), state()));
    } else if (s == 17) {
      d.append("state", 1);
    } // else missing
    if (random.nextInt(5) != 0) d.append("lastModified", random.nextInt(8) == 0 ? (Object) 5 : time());
    int m = random.nextInt(10);
    if (m < 3) {
      List<Object> markers = new ArrayList<>();
      int n = random.nextInt(4);
      for (int i = 0; i < n; i++) markers.add(marker());
      d.append("marker", markers);
    } else if (m < 5) {
      d.append("marker", marker());
    } else if (m == 5) {
      d.append("marker", list(list(marker()), marker()));
    } else if (m == 6) {
      d.append("marker", list());
    }
    if (random.nextBoolean()) {
      d.append("amount", random.nextInt(3) == 0 ? (Object) (random.nextInt(10) + 0.5) : random.nextInt(10));
    }
    int sub = random.nextInt(4);
    if (sub == 0) d.append("sub", doc("a", random.nextInt(4), "b", list(random.nextInt(4), random.nextInt(4))));
    if (sub == 1) d.append("sub", list(doc("a", random.nextInt(4)), doc("a", random.nextInt(4))));
    if (random.nextInt(3) == 0) d.append("name", pickFrom(List.of("alpha", "Beta", "gamma", "ALPHA2", "delta")));
    int c = random.nextInt(7);
    if (c == 0) d.append("code", "c" + random.nextInt(30));
    if (c == 1) d.append("code", list("c" + random.nextInt(30), "c" + (30 + random.nextInt(30))));
    if (c == 2) d.append("code", list(list("c" + (60 + random.nextInt(30)))));
    return d;
  }

  /** A filter of 1 to 4 clauses in random order, some inside $and, maybe an $or. */
  private Document filter(int depth) {
    Document f = new Document();
    int n = 1 + random.nextInt(4);
    List<Document> and = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Document clause = clause(depth);
      if (random.nextInt(5) == 0) {
        and.add(clause);
      } else {
        for (Map.Entry<String, Object> e : clause.entrySet()) f.put(e.getKey(), e.getValue());
      }
    }
    if (!and.isEmpty()) {
      if (random.nextBoolean()) {
        f.put("$and", and);
      } else {
        Document front = new Document("$and", and);
        front.putAll(f);
        f = front;
      }
    }
    return f;
  }

  private Document clause(int depth) {
    int pick = random.nextInt(depth > 0 ? 40 : 36);
    switch (pick) {
      case 0: case 1: case 2: case 3:
        return doc("_id", idValue());
      case 4:
        return doc("_id", doc("$eq", idValue()));
      case 5: {
        List<Object> ids = new ArrayList<>();
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) ids.add(idValue());
        return doc("_id", doc("$in", ids));
      }
      case 6: case 7: case 8:
        return doc("state", state());
      case 9:
        return doc("state", doc("$in", list(state(), state())));
      case 10:
        return doc("state", doc(random.nextBoolean() ? "$ne" : "$eq", state()));
      case 11:
        return doc("state", doc("$nin", list(state())));
      case 12:
        return doc("state", doc("$exists", random.nextBoolean()));
      case 13:
        return doc("state", null);
      case 14: case 15:
        return doc("marker", marker());
      case 16:
        return doc("marker", doc("$in", list(marker(), marker())));
      case 17:
        return doc("marker", list(marker()));
      case 18:
        return doc("marker", doc("$all", list(marker())));
      case 19:
        return doc("lastModified", doc(pickFrom(List.of("$lt", "$gte", "$lte")).toString(), time()));
      case 20:
        return doc("sub.a", random.nextInt(4));
      case 21:
        return doc("sub.b", random.nextInt(4));
      case 22:
        return doc("marker.0", doc("$exists", true));
      case 23:
        return doc("name", new BsonRegularExpression(random.nextBoolean() ? "^a" : "ta$", random.nextBoolean() ? "i" : ""));
      case 24:
        return doc("name", doc("$regex", "^al", "$options", "i"));
      case 25:
        return doc("code", "c" + random.nextInt(60));
      case 26:
        return doc("code", doc("$in", list("c" + random.nextInt(90), "c" + random.nextInt(90))));
      case 27:
        return doc("amount", doc("$gt", random.nextInt(10)));
      case 28:
        return doc("$expr", doc("$lt", list("$lastModified", "$$NOW")));
      case 29:
        return doc("marker", doc("$exists", true, "$not", doc("$type", "array")));
      case 30:
        return doc("$comment", "c");
      case 31:
        return doc("sub", doc("a", random.nextInt(4), "b", list(random.nextInt(4), random.nextInt(4))));
      case 32:
        return doc("marker", doc("$size", random.nextInt(3)));
      case 33:
        return doc("state", doc("$type", "string"));
      case 34: {
        // Clauses that throw on some documents or always: errors must be the same.
        switch (random.nextInt(6)) {
          case 0:
            return doc("state", doc("$bogus", 1));
          case 1:
            return doc("name", new BsonRegularExpression("(", ""));
          case 2:
            return doc("amount", doc("$mod", list(0, 0)));
          case 3:
            return doc("state", doc("$type", "nosuchtype"));
          case 4:
            return doc("marker", doc("$size", "x"));
          default:
            return doc("$and", list());
        }
      }
      case 35:
        return doc("marker", doc("$elemMatch", doc("$gt", 3)));
      default:
        return doc("$or", list(filter(depth - 1), filter(depth - 1)));
    }
  }

  private Document sort() {
    switch (random.nextInt(5)) {
      case 0:
        return doc("$natural", -1);
      case 1:
        return doc("$natural", 1);
      case 2:
        return doc("amount", -1, "_id", 1);
      case 3:
        return doc("lastModified", 1);
      default:
        return doc("state", 1);
    }
  }

  private Document projection() {
    switch (random.nextInt(3)) {
      case 0:
        return doc("state", 1);
      case 1:
        return doc("_id", 0, "marker", 1);
      default:
        return doc("sub", 0);
    }
  }

  private Document updateSpec() {
    switch (random.nextInt(12)) {
      case 0:
        return doc("$set", doc("state", state(), "lastModified", time()));
      case 1:
        return doc("$inc", doc("amount", 1));
      case 2:
        return doc("$push", doc("marker", marker()));
      case 3:
        return doc("$pull", doc("marker", marker()));
      case 4:
        return doc("$addToSet", doc("marker", marker()));
      case 5:
        return doc("$unset", doc("state", ""));
      case 6:
        return doc("$set", doc("marker.$", 99));
      case 7:
        return doc("state", state(), "marker", list(marker())); // replacement
      case 8:
        return doc("$set", doc("_id", idValue()));
      case 9:
        return doc("$set", doc("code", "c" + random.nextInt(30)));
      case 10:
        return doc("$set", doc("marker", marker()));
      default:
        return doc("$set", doc("state", state()));
    }
  }
}
