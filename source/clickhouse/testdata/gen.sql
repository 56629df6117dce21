-- Generated spans for the load tests: traces of a server span and four client calls
-- (auth, search, llm, db), one trace a millisecond from 2026-03-02T10:00:00Z, lognormal
-- durations, 2% errors (503), 1% llm calls cut at 3 s by a deadline. {table} and {rows}
-- are filled in by the test. Events and links are left empty (their default).
INSERT INTO {table} (Timestamp, TraceId, SpanId, ParentSpanId, TraceState, SpanName, SpanKind, ServiceName,
  ResourceAttributes, ScopeName, ScopeVersion, SpanAttributes, Duration, StatusCode, StatusMessage) SELECT
  fromUnixTimestamp64Nano(toInt64(1772445600000000000 + k * 1000000 + j * 1000)) AS Timestamp,
  lower(hex(cityHash64(k, 1))) || lower(hex(cityHash64(k, 2))) AS TraceId,
  lower(hex(cityHash64(k, j, 3))) AS SpanId,
  if(j = 0, '', lower(hex(cityHash64(k, 0, 3)))) AS ParentSpanId,
  '' AS TraceState,
  ['GET /checkout', 'auth', 'search', 'llm', 'db'][j + 1] AS SpanName,
  if(j = 0, 'Server', 'Client') AS SpanKind,
  'gateway' AS ServiceName,
  map('service.name', 'gateway', 'k8s.pod.name', concat('gw-', toString(k % 7))) AS ResourceAttributes,
  'lib' AS ScopeName, '1.0' AS ScopeVersion,
  map('http.response.status_code', if(err, '503', '200'), 'zone', ['a', 'b', 'c'][k % 3 + 1]) AS SpanAttributes,
  if(j = 3 AND cityHash64(k, 9) % 100 = 0, toUInt64(3000000000), toUInt64(1000000 * exp(2.5 + (j * 0.3) + 0.8 * ((cityHash64(k, j, 5) % 10000) / 10000.0 - 0.5) * 3))) AS Duration,
  if(err OR (j = 3 AND cityHash64(k, 9) % 100 = 0), 'Error', 'Ok') AS StatusCode,
  if(j = 3 AND cityHash64(k, 9) % 100 = 0, 'context deadline exceeded', '') AS StatusMessage
FROM (SELECT intDiv(number, 5) AS k, number % 5 AS j, cityHash64(number, 7) % 100 < 2 AS err FROM numbers({rows}))
