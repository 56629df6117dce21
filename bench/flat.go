package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// The flat case: tailscope and DuckDB on the flat JSON lines and the flat
// Parquet file at every size of -sizes, against DuckDB's per-hop quantile
// query (the targets) and, with -full-sql, DuckDB running SQL that does
// what tailscope does (informational).

// flatGroups generates the flat files at every size (cached in the work
// folder, one file per size and format) and returns their groups, sizes
// ascending, JSON lines before Parquet (and Parquet with extra columns); with -ratio, also tailscope alone
// on JSON lines at a tenth of the largest size when -sizes lacks it, for
// the peak-RSS-growth check.
func flatGroups(c config, t tools, logf func(string, ...any)) ([]*group, error) {
	var gs []*group
	for _, size := range c.sizes {
		sg, err := flatSize(c, t, size, logf)
		if err != nil {
			return nil, err
		}
		gs = append(gs, sg...)
	}
	largest := slices.Max(c.sizes)
	if small := largest / 10; c.ratio && small >= 1000 && !slices.Contains(c.sizes, small) {
		path := filepath.Join(c.dir, fmt.Sprintf("spans-%d.jsonl", small))
		n, err := cachedGen(path, small, "jsonl")
		if err != nil {
			return nil, err
		}
		gs = append(gs, &group{format: fmtJSONL, size: small, spans: n, minRounds: minFlatRounds, ts: t.analyze(path)})
	}
	return gs, nil
}

// flatSize is the groups of one size: JSON lines, Parquet, and with -wide
// Parquet with extra columns.
func flatSize(c config, t tools, size int, logf func(string, ...any)) ([]*group, error) {
	jsonl := filepath.Join(c.dir, fmt.Sprintf("spans-%d.jsonl", size))
	pq := filepath.Join(c.dir, fmt.Sprintf("spans-%d.parquet", size))
	start := time.Now()
	nj, err := cachedGen(jsonl, size, "jsonl")
	if err != nil {
		return nil, err
	}
	np, err := cachedGen(pq, size, "parquet")
	if err != nil {
		return nil, err
	}
	if nj != np {
		return nil, fmt.Errorf("generated %d JSON lines but %d Parquet rows", nj, np)
	}
	logf("generated %d spans in %s (%s JSONL, %s Parquet)", nj, time.Since(start).Round(time.Millisecond), fileSize(jsonl), fileSize(pq))
	j, err := flatGroup(c, t, fmtJSONL, "jsonl", size, nj, jsonl, fmt.Sprintf("read_ndjson('%s', columns=%s)", jsonl, jsonColumns), "duration_ms")
	if err != nil {
		return nil, err
	}
	p, err := flatGroup(c, t, fmtParquet, "parquet", size, np, pq, fmt.Sprintf("read_parquet('%s')", pq), "duration_ns / 1e6")
	if err != nil {
		return nil, err
	}
	gs := []*group{j, p}
	if c.wide {
		wide := filepath.Join(c.dir, fmt.Sprintf("spans-%d-wide.parquet", size))
		nw, err := cachedGen(wide, size, "parquet-wide")
		if err != nil {
			return nil, err
		}
		if nw != np {
			return nil, fmt.Errorf("generated %d Parquet rows but %d with extra columns", np, nw)
		}
		logf("generated %d spans as Parquet with %d extra columns (%s)", nw, wideExtra, fileSize(wide))
		w, err := flatGroup(c, t, fmtWide, "parquet-wide", size, nw, wide, fmt.Sprintf("read_parquet('%s')", wide), "duration_ns / 1e6")
		if err != nil {
			return nil, err
		}
		gs = append(gs, w)
	}
	return gs, nil
}

// flatGroup is tailscope and DuckDB's queries on one flat file; src is
// DuckDB's table function reading it, durMs its duration in ms, kind
// the file's name for the SQL files (quantile-KIND-SIZE.sql).
func flatGroup(c config, t tools, format, kind string, size, spans int, path, src, durMs string) (*group, error) {
	g := &group{format: format, size: size, spans: spans, minRounds: minFlatRounds, ts: t.analyze(path)}
	tag := fmt.Sprintf("%s-%d", kind, size)
	q, err := t.query(dqName, "quantile-"+tag, quantileSQL(src, durMs), path)
	if err != nil {
		return nil, err
	}
	g.duck = append(g.duck, q)
	if c.fullSQL {
		f, err := t.query(dfName, "full-"+tag, fullSQL(src, durMs), path)
		if err != nil {
			return nil, err
		}
		g.duck = append(g.duck, f)
	}
	return g, nil
}
