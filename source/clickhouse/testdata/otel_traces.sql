-- The spans table the tests read: tailscope's own statement of the
-- interface it reads, the otel_traces table as the OpenTelemetry
-- Collector's ClickHouse exporter lays it out (table name, column names,
-- column types, partition and sorting key). Storage details that do not
-- change what a query sees (codecs, skip indexes, TTL) are left out.
--
-- engine_test.go replaces {db} and {table} before it runs the statement.

CREATE TABLE {db}.{table}
(
    -- identity of the span
    TraceId        String,
    SpanId         String,
    ParentSpanId   String,
    TraceState     String,

    -- what it is, and where it ran
    ServiceName    LowCardinality(String),
    SpanName       LowCardinality(String),
    SpanKind       LowCardinality(String),
    ScopeName      String,
    ScopeVersion   String,

    -- when, and how long (nanoseconds)
    Timestamp      DateTime64(9),
    Duration       UInt64,

    -- outcome
    StatusCode     LowCardinality(String),
    StatusMessage  String,

    -- attributes, every value as text
    ResourceAttributes  Map(LowCardinality(String), String),
    SpanAttributes      Map(LowCardinality(String), String),

    -- events and links: parallel arrays, one element per event or link
    Events Nested
    (
        Timestamp   DateTime64(9),
        Name        LowCardinality(String),
        Attributes  Map(LowCardinality(String), String)
    ),
    Links Nested
    (
        TraceId     String,
        SpanId      String,
        TraceState  String,
        Attributes  Map(LowCardinality(String), String)
    )
)
ENGINE = MergeTree
PARTITION BY toDate(Timestamp)
ORDER BY (ServiceName, SpanName, toDateTime(Timestamp))
