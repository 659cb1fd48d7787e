package flowscope;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkFirehoseListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerBlockUpdated;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.scheduler.SparkListenerExecutorMetricsUpdate;
import org.apache.spark.util.JsonProtocol;

/**
 * Streams every Spark listener event, as the JSON line Spark writes to its event log, to a flowscope server over
 * TCP. Spark's listener thread only serializes the event and offers it to a bounded queue: it never waits (a full
 * queue drops the event and counts it). A thread of its own connects and sends. Each connection starts with a
 * {"Event":"flowscope.Hello"} line; whenever this listener's or Spark's listener-bus drop counters move, a
 * {"Event":"flowscope.Dropped"} line goes out in order, so the server marks the session uncertain from there.
 *
 * By configuration alone (any Spark application, Scala and Java included): spark.jars=the built jar,
 * spark.extraListeners=flowscope.FlowscopeListener, spark.flowscope.host and spark.flowscope.port (the server's
 * Spark ingest port, default 127.0.0.1:7337), spark.flowscope.token, spark.flowscope.queue (capacity, 100000).
 * flowscope builds the jar from this file with the JDK on the machine (javac --release 8 against Spark's jars).
 */
public class FlowscopeListener extends SparkFirehoseListener {
    private final String host;
    private final int port;
    private final String token;
    private final String appName;
    private final String appId;
    private final ArrayBlockingQueue<String> queue;
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private final Object lock = new Object();
    private volatile boolean closed = false;
    private volatile long sent = 0;

    /** Spark creates extra listeners with their SparkConf. */
    public FlowscopeListener(SparkConf conf) {
        this(conf.get("spark.flowscope.host", "127.0.0.1"), conf.getInt("spark.flowscope.port", 7337),
             conf.get("spark.flowscope.token", ""), conf.getInt("spark.flowscope.queue", 100000),
             conf.get("spark.app.name", ""), conf.get("spark.app.id", ""));
    }

    public FlowscopeListener(String host, int port, String token, int capacity, String appName, String appId) {
        this.host = host;
        this.port = port;
        this.token = token;
        this.appName = appName;
        this.appId = appId;
        this.queue = new ArrayBlockingQueue<>(Math.max(16, capacity));
        Thread sender = new Thread(this::run, "flowscope-listener");
        sender.setDaemon(true);
        sender.start();
    }

    /** On Spark's listener thread: serialize and offer, never wait (except to flush at the application end). */
    @Override
    public void onEvent(SparkListenerEvent event) {
        if (event instanceof SparkListenerExecutorMetricsUpdate || event instanceof SparkListenerBlockUpdated
                || !event.logEvent()) {
            return;  // what Spark's own event log leaves out (heartbeats, block updates)
        }
        String json;
        try {
            json = JsonProtocol.sparkEventToJsonString(event);
        } catch (Throwable t) {
            failed.incrementAndGet();
            return;
        }
        send(json);
        if (event instanceof SparkListenerApplicationEnd) {
            flush(5000);
        }
    }

    /** Queue one JSON line (also for lines from elsewhere, e.g. a synthetic application start); false if dropped. */
    public boolean send(String json) {
        if (closed || !queue.offer(json)) {
            dropped.incrementAndGet();
            return false;
        }
        accepted.incrementAndGet();
        return true;
    }

    /** Wait (at most timeoutMs) until everything queued so far has been written to the socket. */
    public boolean flush(long timeoutMs) {
        long end = System.currentTimeMillis() + timeoutMs;
        long target = accepted.get();
        synchronized (lock) {
            while (flushed < target) {
                long left = end - System.currentTimeMillis();
                if (left <= 0 || closed) return false;
                try {
                    lock.wait(Math.min(left, 50));
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
    }

    public long dropped() { return dropped.get(); }
    public long sent() { return sent; }
    public long failed() { return failed.get(); }
    public int queued() { return queue.size(); }
    public boolean connected() { return out != null; }

    // --- the sender thread -----------------------------------------------------------------------------------

    private Socket socket;
    private volatile OutputStream out;
    private volatile long flushed = 0;  // lines written and flushed to the socket
    private long reportedDrops = 0;
    private Map<String, Long> reportedSpark = new TreeMap<>();
    private long lastCheck = 0;

    private void run() {
        try {
            while (!closed) {
                if (out == null && !connect()) {
                    Thread.sleep(500);
                    continue;
                }
                String line = queue.poll(100, TimeUnit.MILLISECONDS);
                long now = System.currentTimeMillis();
                boolean withSpark = now - lastCheck >= 1000;
                if (withSpark) lastCheck = now;
                report(withSpark);
                if (line != null) {
                    write(line);
                    sent++;
                }
                if (queue.isEmpty()) {
                    out.flush();
                    flushed = sent;
                    synchronized (lock) { lock.notifyAll(); }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            // the server went away; what is still queued is lost
        } finally {
            closed = true;
            try { if (socket != null) socket.close(); } catch (IOException ignored) { }
            out = null;
            synchronized (lock) { lock.notifyAll(); }
        }
    }

    private boolean connect() {
        try {
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(host, port), 2000);
            socket = s;
            OutputStream o = new BufferedOutputStream(s.getOutputStream(), 1 << 16);
            o.write(("{\"Event\":\"flowscope.Hello\",\"protocol\":1,\"listener\":\"jvm\",\"token\":\"" + escape(token)
                     + "\",\"app\":\"" + escape(appName) + "\",\"appId\":\"" + escape(appId) + "\"}\n")
                    .getBytes(StandardCharsets.UTF_8));
            o.flush();
            out = o;
            return true;
        } catch (IOException e) {
            return false;
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
