package main

import "strings"

// jsonColumns pins the JSON schema so that DuckDB does not spend a
// sampling pass guessing it (and so both sides read the same types).
const jsonColumns = `{trace_id: 'VARCHAR', span_id: 'VARCHAR', parent_id: 'VARCHAR', service: 'VARCHAR', name: 'VARCHAR', kind: 'VARCHAR', hop: 'VARCHAR', start: 'BIGINT', duration_ms: 'DOUBLE', status: 'VARCHAR', timeout: 'BOOLEAN', code: 'INTEGER', attempt: 'INTEGER', timeout_ms: 'DOUBLE'}`

// quantileSQL is what a user would type first: per-hop percentiles.
func quantileSQL(src, durMs string) string {
	return `SELECT hop, count(*) AS attempts,
  quantile_cont(` + durMs + `, [0.5, 0.9, 0.95, 0.99, 0.999]) AS q,
  max(` + durMs + `) AS max_ms
FROM ` + src + `
GROUP BY hop ORDER BY hop;
`
}

// fullSQL does in SQL what tailscope analyze does: per-hop attempts,
// failures, percentiles over all attempts and over time to success
// (successes plus cut attempts), the failure-time histogram, the calls
// (attempts of one hop for one parent) and their retry yield, and the
// request outcomes from the root spans with their failure landing.
func fullSQL(src, durMs string) string {
	q := `SET preserve_insertion_order = false;
CREATE TEMP TABLE s AS SELECT trace_id, parent_id, hop, start, ` + durMs + ` AS d,
  (status = 'error' OR coalesce(timeout, false)) AS failed, coalesce(timeout, false) AS cut, attempt
FROM ` + src + `;
SELECT hop, count(*) AS attempts, count(*) FILTER (failed) AS failed, count(*) FILTER (cut) AS cut,
  quantile_cont(d, [0.5, 0.9, 0.95, 0.99, 0.999]) AS q, max(d) AS max_ms,
  quantile_cont(d, [0.5, 0.99]) FILTER (NOT failed OR cut) AS tts
FROM s GROUP BY hop ORDER BY hop;
SELECT hop, floor(d / 50) * 50 AS from_ms, count(*) AS n FROM s WHERE failed GROUP BY ALL ORDER BY ALL;
WITH calls AS (
  SELECT hop, trace_id, parent_id, count(*) AS attempts, arg_max(failed, attempt) AS last_failed
  FROM s WHERE parent_id IS NOT NULL GROUP BY ALL)
SELECT hop, count(*) AS calls, count(*) FILTER (attempts > 1) AS retried,
  count(*) FILTER (attempts > 1 AND NOT last_failed) AS recovered
FROM calls GROUP BY hop ORDER BY hop;
SELECT count(*) AS requests, avg((NOT failed)::INT) AS success_rate,
  quantile_cont(d, [0.5, 0.95, 0.99]) AS q
FROM s WHERE parent_id IS NULL;
SELECT floor(d / 500) * 500 AS from_ms, count(*) AS n FROM s WHERE parent_id IS NULL AND failed GROUP BY ALL ORDER BY ALL;
`
	return strings.TrimSpace(q) + "\n"
}

// nodeScript runs the statements of a SQL file with DuckDB's Node API and
// reads every result in full (so nothing is left lazily unevaluated).
const nodeScript = `import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
const [file, threads] = process.argv.slice(2);
const sql = readFileSync(file, 'utf8');
const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const conn = await instance.connect();
let rows = 0;
for (const stmt of sql.split(';').map(s => s.trim()).filter(Boolean)) {
  const r = await conn.runAndReadAll(stmt);
  rows += r.getRows().length;
}
console.log(rows);
`
