package txnrecovery.testdb;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Runs mongo-java-server (in-memory backend) on 127.0.0.1 for the test suite.
 *
 * <pre>
 * java -cp ... txnrecovery.testdb.Launcher --port N [--owner-pid PID] [--stock]
 * </pre>
 *
 * <p>The backend is {@link NarrowedBackend} (the in-memory backend, with scans narrowed by
 * indexes; same results). {@code --stock}, or {@code TESTDB_BACKEND=stock} in the environment,
 * runs mongo-java-server's own {@code MemoryBackend} instead. {@code TESTDB_NARROW_VERIFY=1} makes
 * the narrowed backend also run the stock scan for every narrowed query and report any difference
 * on stderr ({@code NARROWING MISMATCH}); the counts are printed on stderr at shutdown.
 *
 * <p>Once the server accepts connections, exactly one line {@code mongodb://127.0.0.1:PORT} is
 * printed on stdout; diagnostics go to stderr. SIGTERM (or SIGINT) shuts the server down and
 * exits with status 0. With {@code --owner-pid}, the server also shuts itself down within about a
 * second of that process going away, so a crashed or killed test runner cannot leak it.
 *
 * <p>Exit status: 0 clean shutdown, 2 cannot bind, 3 owner already gone, 64 usage.
 */
public final class Launcher {
  private static final String HOST = "127.0.0.1";
  private static final int EXIT_BIND = 2;
  private static final int EXIT_NO_OWNER = 3;
  private static final int EXIT_USAGE = 64;

  /** The status the shutdown hook exits with; the JVM would otherwise report 143 on SIGTERM. */
  private static volatile int exitStatus = 0;

  private Launcher() {}

  public static void main(String[] args) throws InterruptedException {
    int port = -1;
    long ownerPid = -1;
    String backendName = System.getenv().getOrDefault("TESTDB_BACKEND", "narrowed");
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("--stock")) {
        backendName = "stock";
      } else if ((arg.equals("--port") || arg.equals("--owner-pid")) && i + 1 < args.length) {
        long value = parseNumber(arg, args[++i]);
        if (arg.equals("--port")) {
          if (value > 65535) usage("--port must be 0..65535, got " + value);
          port = (int) value;
        } else {
          if (value == 0) usage("--owner-pid must be a process id, got 0");
          ownerPid = value;
        }
      } else {
        usage("unexpected argument: " + arg);
      }
    }
    if (port < 0) usage("--port is required (0 picks a free port)");
    if (!backendName.equals("narrowed") && !backendName.equals("stock")) {
      usage("TESTDB_BACKEND must be narrowed or stock, got '" + backendName + "'");
    }
    String verifyValue = System.getenv().getOrDefault("TESTDB_NARROW_VERIFY", "0");
    if (!verifyValue.equals("0") && !verifyValue.equals("1")) {
      usage("TESTDB_NARROW_VERIFY must be 0 or 1, got '" + verifyValue + "'");
    }

    ProcessHandle owner = null;
    if (ownerPid > 0) {
      Optional<ProcessHandle> handle = ProcessHandle.of(ownerPid);
      if (handle.isEmpty() || !isAlive(handle.get())) {
        System.err.println("testdb: owner process " + ownerPid + " is not running; not starting");
        System.exit(EXIT_NO_OWNER);
      }
      owner = handle.get();
    }

    NarrowedBackend narrowed =
        backendName.equals("narrowed") ? new NarrowedBackend(verifyValue.equals("1")) : null;
    MongoServer server = new MongoServer(narrowed != null ? narrowed : new MemoryBackend());
    InetSocketAddress address;
    try {
      server.bind(HOST, port);
      address = server.getLocalAddress();
      checkAccepting(address);
    } catch (RuntimeException | IOException e) {
      System.err.println("testdb: cannot serve on " + HOST + ":" + port + ": " + describe(e));
      server.shutdownNow();
      System.exit(EXIT_BIND);
      return;
    }

    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.shutdownNow();
                  if (narrowed != null) {
                    System.err.println("testdb: " + narrowed.stats().summary());
                  }
                  System.err.println("testdb: server on port " + address.getPort() + " stopped");
                  System.err.flush();
                  stopped.countDown();
                  // Exits with our status instead of the JVM's 128+signal.
                  Runtime.getRuntime().halt(exitStatus);
                },
                "testdb-shutdown"));

    if (owner != null) watchOwner(owner);

    System.err.println(
        "testdb: mongo-java-server ("
            + (narrowed != null ? "narrowed memory backend" : "stock memory backend")
            + ") on "
            + HOST
            + ":"
            + address.getPort()
            + ", pid "
            + ProcessHandle.current().pid()
            + (owner != null ? ", owner pid " + owner.pid() : ""));
    System.err.flush();
    System.out.println("mongodb://" + HOST + ":" + address.getPort());
    System.out.flush();

    stopped.await();
  }

  /** Connects once to the bound address, so the URI is only printed when connections work. */
  private static void checkAccepting(InetSocketAddress address) throws IOException {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(HOST, address.getPort()), 5000);
    }
  }

  private static void watchOwner(ProcessHandle owner) {
    ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "testdb-owner-watch");
              t.setDaemon(true);
              return t;
            });
    timer.scheduleWithFixedDelay(
        () -> {
          if (!isAlive(owner)) {
            System.err.println("testdb: owner process " + owner.pid() + " is gone; shutting down");
            System.err.flush();
            exitStatus = 0;
            System.exit(0);
          }
        },
        1,
        1,
        TimeUnit.SECONDS);
  }

  /**
   * ProcessHandle.isAlive() already detects a reused pid (it compares start times) but counts a
   * zombie as alive; an owner that died and was not reaped yet is gone for our purpose.
   */
  private static boolean isAlive(ProcessHandle process) {
    if (!process.isAlive()) return false;
    Path stat = Path.of("/proc", Long.toString(process.pid()), "stat");
    try {
      String text = new String(Files.readAllBytes(stat), StandardCharsets.US_ASCII);
      int end = text.lastIndexOf(')');
      if (end >= 0 && end + 2 < text.length()) {
        char state = text.charAt(end + 2);
        return state != 'Z' && state != 'X';
      }
    } catch (IOException e) {
      // No /proc (not Linux) or the process just went away: trust isAlive() / the next poll.
    }
    return true;
  }

  private static long parseNumber(String option, String value) {
    try {
      long n = Long.parseLong(value);
      if (n < 0) usage(option + " must not be negative, got " + value);
      return n;
    } catch (NumberFormatException e) {
      usage(option + " needs a number, got '" + value + "'");
      return -1;
    }
  }

  private static String describe(Throwable e) {
    StringBuilder text = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (text.length() > 0) text.append(": ");
      text.append(t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName());
    }
    return text.toString();
  }

  private static void usage(String problem) {
    System.err.println("testdb: " + problem);
    System.err.println(
        "usage: java -cp ... txnrecovery.testdb.Launcher --port N [--owner-pid PID] [--stock]");
    System.exit(EXIT_USAGE);
  }
}
