package flowscope;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkFirehoseListener;
import org.apache.spark.scheduler.SparkListenerBlockUpdated;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.util.JsonProtocol;

/**
 * Streams every Spark listener event, as the JSON line Spark writes to its event log, to a flowscope server over
 * TCP, and never slows the application down.
 *
 * Spark's listener thread only serializes the event and offers it to a bounded queue (a count of lines and of bytes):
 * it never waits on the network. A full queue drops the event and counts it. A daemon thread of its own connects,
 * sends, and when the server is gone (killed, stalled, not started yet) reconnects with exponential backoff; the
 * driver's stderr gets one warning per outage and one line when the connection is back. Each connection starts with
 * a {"Event":"flowscope.Hello"} line naming this listener instance and how many lines it had taken off its queue
 * ("seq") and dropped before it, so the server resumes the same session and counts the events lost in the outage.
 * Whenever this listener's or Spark's listener-bus drop counters move, a {"Event":"flowscope.Dropped"} line goes out
 * in order. Nothing waits on Spark's thread, not even at the application end: what is still queued when the JVM
 * exits goes out from a shutdown hook (at most SHUTDOWN_FLUSH_MS, and only while connected).
 *
 * By configuration alone (any Spark application, Scala and Java included): spark.jars=the built jar,
 * spark.extraListeners=flowscope.FlowscopeListener, spark.flowscope.host and spark.flowscope.port (the server's
 * Spark ingest port, default 127.0.0.1:7337), spark.flowscope.token, spark.flowscope.queue (capacity in events,
 * 100000), spark.flowscope.queueBytes (capacity in bytes, 64 MiB).
 * flowscope builds the jar from this file with the JDK on the machine (javac --release 8 against Spark's jars).
 */
public class FlowscopeListener extends SparkFirehoseListener {
    static final long SHUTDOWN_FLUSH_MS = 3000;
    static final int CONNECT_TIMEOUT_MS = 1000;
    static final long BACKOFF_FIRST_MS = 200;
    static final long BACKOFF_MAX_MS = 5000;
    static final long DEFAULT_QUEUE_BYTES = 64L << 20;
    static final long DEFERRED_SIZE = 4096;  // what an event not yet serialized counts for in the byte bound
    static final String SCHEDULER_PACKAGE = "org.apache.spark.scheduler.";
    static final String QUEUE_NAME = "flowscope";  // the listener-bus queue of its own (jvm.py registers there too)
    static final long HANDOFF_WAIT_MS = 2000;
    static final int HANDOFF_MAX_EVENTS = 10000;

    private final String host;
    private final int port;
    private final String token;
    private final String appName;
    private final String appId;
    private final String instance = UUID.randomUUID().toString();
    private final ArrayBlockingQueue<Object> queue;  // JSON lines, or events to serialize on the sender thread
    private final long maxBytes;
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private final Object lock = new Object();
    private final Thread shutdownHook = new Thread(() -> flush(SHUTDOWN_FLUSH_MS), "flowscope-listener-flush");
    private volatile boolean closed = false;
    // a configured listener moves from Spark's shared queue to a queue of its own (see onSharedQueue)
    private volatile boolean moveToOwnQueue = false;
    private final AtomicBoolean moveStarted = new AtomicBoolean();
    private final Object moveLock = new Object();
    private final Set<SparkListenerEvent> sharedDelivered = Collections.newSetFromMap(new IdentityHashMap<>());
    private final ArrayDeque<SparkListenerEvent> sharedOrder = new ArrayDeque<>();
    private SparkListenerEvent handoff = null;  // the own queue's first event (guarded by moveLock)
    private long handoffSince = 0;
    private final ArrayDeque<SparkListenerEvent> pending = new ArrayDeque<>();  // the own queue's, held back
    private volatile boolean sharedDone = false;  // the shared queue's deliveries are ignored from now on
    private volatile boolean skipping = false;  // the own queue skips what the shared queue delivered already

    /** Spark creates extra listeners with their SparkConf. */
    public FlowscopeListener(SparkConf conf) {
        this(conf.get("spark.flowscope.host", "127.0.0.1"), conf.getInt("spark.flowscope.port", 7337),
             conf.get("spark.flowscope.token", ""), conf.getInt("spark.flowscope.queue", 100000),
             conf.getLong("spark.flowscope.queueBytes", DEFAULT_QUEUE_BYTES),
             conf.get("spark.app.name", ""), conf.get("spark.app.id", ""));
        moveToOwnQueue = conf.getBoolean("spark.flowscope.ownQueue", true);
    }

    public FlowscopeListener(String host, int port, String token, int capacity, String appName, String appId) {
        this(host, port, token, capacity, DEFAULT_QUEUE_BYTES, appName, appId);
    }

    public FlowscopeListener(String host, int port, String token, int capacity, long maxBytes, String appName,
                             String appId) {
        this.host = host;
        this.port = port;
        this.token = token;
        this.appName = appName;
        this.appId = appId;
        this.queue = new ArrayBlockingQueue<>(Math.max(16, capacity));
        this.maxBytes = Math.max(1 << 16, maxBytes);
        try {
            Runtime.getRuntime().addShutdownHook(shutdownHook);
        } catch (IllegalStateException ignored) {
            // the JVM is already shutting down
        }
        Thread sender = new Thread(this::run, "flowscope-listener");
        sender.setDaemon(true);
        sender.start();
    }

    /** On Spark's listener thread: serialize and offer, never wait on the network. */
    @Override
    public void onEvent(SparkListenerEvent event) {
        if (!moveToOwnQueue) {
            handle(event);
        } else if (!Thread.currentThread().getName().endsWith("-" + QUEUE_NAME)) {
            onSharedQueue(event);
        } else {
            onOwnQueue(event);
        }
    }

    /** Events from outside Spark's scheduler (SQL, streaming: immutable, serialized by Jackson, whose first pass over
     *  a class is slow) are offered as they are and serialized on the sender thread; the scheduler's own are
     *  serialized here, at once, as Spark's event log does (a job's stage infos change after its start is posted). */
    private void handle(SparkListenerEvent event) {
        if (event instanceof SparkListenerExecutorMetricsUpdate || event instanceof SparkListenerBlockUpdated
                || !event.logEvent()) {
            return;  // what Spark's own event log leaves out (heartbeats, block updates)
        }
        if (!event.getClass().getName().startsWith(SCHEDULER_PACKAGE)) {
            offer(event, DEFERRED_SIZE);
            return;
        }
        String json;
        try {
            json = JsonProtocol.sparkEventToJsonString(event);
        } catch (Throwable t) {
            failed.incrementAndGet();
            return;
        }
        send(json);  // nothing waits here, not even at the application end: the shutdown hook sends the rest
    }

    // --- a configured listener moves to a queue of its own -----------------------------------------------------
    //
    // Spark puts listeners named in spark.extraListeners on its shared queue, where a slow moment would delay Spark's
    // other listeners. So at the first event a helper thread adds this listener to a queue of its own (QUEUE_NAME:
    // its own thread and buffer, spark.scheduler.listenerbus.eventqueue.flowscope.capacity). Both queues then deliver
    // every event in the same order, each on its own thread. Until the hand-off the shared queue's deliveries are
    // kept (and remembered); the own queue's first event E decides: if the shared queue already delivered E, it stops
    // at once and the own queue skips what it delivered; else the own queue holds its events back until the shared
    // queue reaches E, which then hands them over (neither thread ever waits; a shared queue HANDOFF_WAIT_MS or
    // HANDOFF_MAX_EVENTS behind is not waited for). From then on only the own queue's deliveries count, and the
    // shared queue's cost a volatile read.

    private void onSharedQueue(SparkListenerEvent event) {
        if (sharedDone) return;
        if (moveStarted.compareAndSet(false, true)) startMove();
        synchronized (moveLock) {
            if (sharedDone) return;
            if (event == handoff) {
                handOver();
                return;
            }
            handle(event);
            sharedOrder.addLast(event);
            sharedDelivered.add(event);
            if (sharedOrder.size() > HANDOFF_MAX_EVENTS) sharedDelivered.remove(sharedOrder.removeFirst());
        }
    }

    private void onOwnQueue(SparkListenerEvent event) {
        if (!sharedDone) {
            synchronized (moveLock) {
                if (!sharedDone) {
                    if (handoff == null) {
                        if (sharedDelivered.contains(event)) {
                            skipping = true;  // the shared queue is ahead: it stops here; skip what it delivered
                            handOver();
                        } else {
                            handoff = event;
                            handoffSince = System.currentTimeMillis();
                        }
                    }
                    if (!sharedDone) {
                        pending.addLast(event);  // delivered by the shared queue's thread once it reaches the handoff
                        if (pending.size() > HANDOFF_MAX_EVENTS
                                || System.currentTimeMillis() - handoffSince > HANDOFF_WAIT_MS) {
                            handOver();  // the shared queue lags too far (or dropped the handoff): stop waiting
                        }
                        return;
                    }
                }
            }
        }
        if (skipping) {
            synchronized (moveLock) {
                if (sharedDelivered.contains(event)) return;
                skipping = false;
                sharedDelivered.clear();
                sharedOrder.clear();
            }
        }
        handle(event);
    }

    /** Under moveLock: from now on only the own queue's deliveries count; those it held back are handled first. */
    private void handOver() {
        sharedDone = true;
        for (SparkListenerEvent e; (e = pending.pollFirst()) != null; ) handle(e);
        if (!skipping) {
            sharedDelivered.clear();
            sharedOrder.clear();
        }
        send("{\"Event\":\"flowscope.Queue\",\"name\":\"" + QUEUE_NAME + "\"}");
    }

    /** On a helper thread: once the SparkContext is active, add this listener to its own queue (if that cannot be
     *  done, it stays on the shared queue and forgets what the hand-off would have needed). */
    private void startMove() {
        Thread mover = new Thread(() -> {
            long end = System.currentTimeMillis() + 120_000;
            try {
                while (System.currentTimeMillis() < end && !closed) {
                    scala.Option<SparkContext> sc = org.apache.spark.SparkContext$.MODULE$.getActive();
                    if (sc.isDefined()) {
                        sc.get().listenerBus().addToQueue(this, QUEUE_NAME);
                        return;
                    }
                    Thread.sleep(20);
                }
            } catch (Throwable t) {
                // another Spark version's internals, or interrupted: it stays on the shared queue
            }
            synchronized (moveLock) {
                moveToOwnQueue = false;
                sharedDelivered.clear();
                sharedOrder.clear();
            }
        }, "flowscope-listener-queue");
        mover.setDaemon(true);
        mover.start();
    }

    /** Queue one JSON line (also for lines from elsewhere, e.g. a synthetic application start); false if dropped. */
    public boolean send(String json) {
        return offer(json, json.length());
    }

    private boolean offer(Object item, long size) {
        if (closed) {
            dropped.incrementAndGet();
            return false;
        }
        if (queuedBytes.addAndGet(size) > maxBytes || !queue.offer(item)) {
            queuedBytes.addAndGet(-size);
            dropped.incrementAndGet();
            return false;
        }
        accepted.incrementAndGet();
        return true;
    }

    /** Wait (at most timeoutMs) until everything queued so far has been written to the socket; false at once when
     *  the server is not connected (nothing is then worth waiting for). */
    public boolean flush(long timeoutMs) {
        long end = System.currentTimeMillis() + timeoutMs;
        long target = accepted.get();
        synchronized (lock) {
            while (handled < target) {
                long left = end - System.currentTimeMillis();
                if (left <= 0 || closed || out == null) return false;
                try {
                    lock.wait(Math.min(left, 20));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
        return true;
    }

    /** Flush (at most timeoutMs), then stop taking events and disconnect. */
    public void close(long timeoutMs) {
        flush(timeoutMs);
        closed = true;
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException ignored) {
            // the JVM is shutting down: the hook is running or has run
        }
    }

    public long dropped() { return dropped.get(); }
    public long sent() { return sent; }
    public long failed() { return failed.get(); }
    public int queued() { return queue.size(); }
    public long queuedBytes() { return queuedBytes.get(); }
    public boolean connected() { return out != null; }
    /** Connections attempted that failed, and connections lost. */
    public long connectFailures() { return connectFailures; }
    public long reconnects() { return Math.max(0, connections - 1); }

    // --- the sender thread -----------------------------------------------------------------------------------

    private Socket socket;
    private volatile OutputStream out;
    private volatile long sent = 0;  // lines written and flushed to the socket
    private volatile long taken = 0;  // lines taken off the queue (sent, being sent, or lost with a connection)
    private volatile long polled = 0;  // items taken off the queue (a line each, unless it could not be serialized)
    private volatile long handled = 0;  // items polled and flushed or lost: what flush() waits for
    private volatile long connectFailures = 0;
    private volatile long connections = 0;
    private long reportedDrops = 0;
    private Map<String, Long> reportedSpark = new TreeMap<>();
    private long lastCheck = 0;
    private long outageSince = 0;  // when the current outage began (0: none)
    private long droppedAtOutage = 0;

    /** Parse and serialize a few real scheduler events once (flowscope/warmup.jsonl in the jar), on this thread,
     *  so that the first real ones on Spark's thread do not pay for class loading and JIT. Best effort. */
    private void warmUp() {
        try (java.io.InputStream in = FlowscopeListener.class.getResourceAsStream("/flowscope/warmup.jsonl")) {
            if (in == null) return;
            java.lang.reflect.Method parse = JsonProtocol.class.getMethod("sparkEventFromJson", String.class);
            java.io.BufferedReader lines = new java.io.BufferedReader(
                new java.io.InputStreamReader(in, StandardCharsets.UTF_8));
            for (String line; (line = lines.readLine()) != null; ) {
                JsonProtocol.sparkEventToJsonString((SparkListenerEvent) parse.invoke(null, line));
            }
        } catch (Throwable ignored) {
            // another Spark version's parser: no warm-up
        }
    }

    private void run() {
        warmUp();
        long backoff = BACKOFF_FIRST_MS;
        while (!closed) {
            if (out == null) {
                String problem = connect();
                if (problem != null) {
                    outage(problem);
                    sleep(backoff);
                    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
                    continue;
                }
                backoff = BACKOFF_FIRST_MS;
                recovered();
            }
            try {
                pump();
            } catch (IOException e) {
                disconnect();
                outage("the connection broke: " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        disconnect();
    }

    /** Send what is queued (waiting 100 ms for a line at most), then flush when the queue is empty. */
    private void pump() throws IOException, InterruptedException {
        Object item = queue.poll(100, TimeUnit.MILLISECONDS);
        long now = System.currentTimeMillis();
        boolean withSpark = now - lastCheck >= 1000;
        if (withSpark) lastCheck = now;
        report(withSpark);
        if (item != null) {
            polled++;
            String line = item instanceof String ? (String) item : serialize((SparkListenerEvent) item);
            queuedBytes.addAndGet(item instanceof String ? -line.length() : -DEFERRED_SIZE);
            if (line != null) {
                taken++;
                write(line);
            }
        }
        if (queue.isEmpty()) {
            out.flush();
            sent = taken;
            handled = polled;
            synchronized (lock) { lock.notifyAll(); }
        }
    }

    private String serialize(SparkListenerEvent event) {
        try {
            return JsonProtocol.sparkEventToJsonString(event);
        } catch (Throwable t) {
            failed.incrementAndGet();
            return null;
        }
    }

    private void disconnect() {
        try { if (socket != null) socket.close(); } catch (IOException ignored) { }
        socket = null;
        out = null;
        handled = polled;  // what was taken is sent or lost: flush() stops waiting for it
        synchronized (lock) { lock.notifyAll(); }
    }

    private void sleep(long ms) {
        long end = System.currentTimeMillis() + ms;
        try {
            while (!closed && System.currentTimeMillis() < end) Thread.sleep(Math.min(50, ms));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            closed = true;
        }
    }

    /** One warning per outage, on the driver's stderr. */
    private void outage(String problem) {
        connectFailures++;
        if (outageSince != 0) return;
        outageSince = System.currentTimeMillis();
        droppedAtOutage = dropped.get();
        System.err.println("flowscope: warning: the listener " + (connections == 0 ? "cannot reach" : "lost")
            + " the flowscope server at " + host + ":" + port + " (" + problem + "); the application is not "
            + "affected. It reconnects on its own (backoff up to " + BACKOFF_MAX_MS / 1000 + " s) and keeps at most "
            + queue.remainingCapacity() + " events meanwhile; events beyond that are dropped and counted.");
    }

    private void recovered() {
        connections++;
        if (outageSince == 0) return;
        long seconds = (System.currentTimeMillis() - outageSince) / 1000;
        System.err.println("flowscope: the listener reconnected to " + host + ":" + port + " after " + seconds
            + " s (" + (dropped.get() - droppedAtOutage) + " events dropped meanwhile)");
        outageSince = 0;
    }

    /** null if connected (the hello sent), else what went wrong. */
    private String connect() {
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MS);
            OutputStream o = new BufferedOutputStream(s.getOutputStream(), 1 << 16);
            o.write(("{\"Event\":\"flowscope.Hello\",\"protocol\":1,\"listener\":\"jvm\",\"token\":\"" + escape(token)
                     + "\",\"app\":\"" + escape(appName) + "\",\"appId\":\"" + escape(appId)
                     + "\",\"instance\":\"" + instance + "\",\"connection\":" + (connections + 1)
                     + ",\"seq\":" + taken + ",\"dropped\":" + dropped.get() + "}\n")
                    .getBytes(StandardCharsets.UTF_8));
            o.flush();
            socket = s;
            out = o;
            reportedDrops = dropped.get();  // the hello told the server
            return null;
        } catch (IOException e) {
            try { s.close(); } catch (IOException ignored) { }
            return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        }
    }

    private void write(String line) throws IOException {
        out.write(line.getBytes(StandardCharsets.UTF_8));
        out.write('\n');
    }

    /** A flowscope.Dropped line, in order, when this listener's (or, checked once a second, Spark's) counters moved. */
    private void report(boolean withSpark) throws IOException {
        long own = dropped.get();
        Map<String, Long> spark = withSpark ? sparkDrops() : reportedSpark;
        if (own == reportedDrops && spark.equals(reportedSpark)) return;
        StringBuilder b = new StringBuilder("{\"Event\":\"flowscope.Dropped\",\"count\":").append(own)
            .append(",\"sent\":").append(sent).append(",\"spark\":{");
        String sep = "";
        for (Map.Entry<String, Long> e : spark.entrySet()) {
            b.append(sep).append('"').append(escape(e.getKey())).append("\":").append(e.getValue());
            sep = ",";
        }
        write(b.append("}}").toString());
        reportedDrops = own;
        reportedSpark = spark;
    }

    /** Spark's own counters (queue.NAME.numDroppedEvents) of the active SparkContext, those above zero. */
    private static Map<String, Long> sparkDrops() {
        Map<String, Long> m = new TreeMap<>();
        try {
            scala.Option<SparkContext> sc = org.apache.spark.SparkContext$.MODULE$.getActive();
            if (sc.isEmpty()) return m;
            for (Map.Entry<String, com.codahale.metrics.Counter> e :
                    sc.get().listenerBus().metrics().metricRegistry().getCounters().entrySet()) {
                long n = e.getValue().getCount();
                if (e.getKey().endsWith("numDroppedEvents") && n > 0) m.put(e.getKey(), n);
            }
        } catch (Throwable ignored) {
            // another Spark version's internals: the listener's own counter still works
        }
        return m;
    }

    private static String escape(String s) {
        if (s == null) return "";
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }
}
