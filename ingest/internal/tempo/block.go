package tempo

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/ingest/internal/record"
)

// BlockFiles narrows the files found under a directory when some
// folders are Grafana Tempo blocks, so that pointing tailscope at a block,
// a tenant or a whole local Tempo store reads spans and nothing else:
//
//   - a folder holding meta.json and data.parquet is a block: data.parquet
//     holds its spans; meta.json, the bloom-N filters, the index and the
//     flushed marker are Tempo's bookkeeping;
//   - a folder holding meta.compacted.json and data.parquet is a block that
//     compaction replaced: its traces are also in the block that replaced
//     it, so reading both would count them twice; its data.parquet is not
//     read (nor its bookkeeping);
//   - a tenant folder's index.json(.gz), beside block folders, lists blocks.
//
// Only those files are passed over, each with its reason: any other file
// in such a folder (a log someone put there) is read like any file. Each
// folder passed over in part gives one note.
func BlockFiles(found []string) (keep []string, passed []record.PassedFile, notes []string) {
	names := map[string]map[string]bool{}
	for _, f := range found {
		d := filepath.Dir(f)
		if names[d] == nil {
			names[d] = map[string]bool{}
		}
		names[d][filepath.Base(f)] = true
	}
	live := func(d string) bool { return names[d]["meta.json"] && names[d]["data.parquet"] }
	compacted := func(d string) bool {
		return names[d]["meta.compacted.json"] && names[d]["data.parquet"] && !names[d]["meta.json"]
	}
	tenant := map[string]bool{}
	for d := range names {
		if live(d) || compacted(d) {
			tenant[filepath.Dir(d)] = true
		}
	}
	count := map[string]int{}
	var order []string
	for _, f := range found {
		d, b := filepath.Dir(f), filepath.Base(f)
		var reason string
		strict := false
		switch {
		case (live(d) || compacted(d)) && tempoBookkeeping(b):
			reason = "Tempo block bookkeeping (meta, bloom filter, index)"
		case compacted(d) && b == "data.parquet":
			reason = "a compacted Tempo block (meta.compacted.json): its traces are in the block that replaced it"
			strict = true
		case tenant[d] && (b == "index.json.gz" || b == "index.json"):
			reason = "Tempo's tenant index"
		default:
			keep = append(keep, f)
			continue
		}
		passed = append(passed, record.PassedFile{File: f, Reason: reason, Strict: strict})
		if count[d] == 0 {
			order = append(order, d)
		}
		count[d]++
	}
	for _, d := range order {
		switch {
		case compacted(d):
			notes = append(notes, fmt.Sprintf("%s: a compacted Tempo block (meta.compacted.json): passed over, its traces are in the block that replaced it", d))
		case live(d):
			notes = append(notes, fmt.Sprintf("%s: a Tempo block: read data.parquet, passed over %d bookkeeping files (meta.json, bloom filters, index)", d, count[d]))
		default:
			notes = append(notes, fmt.Sprintf("%s: passed over Tempo's tenant index (index.json)", d))
		}
	}
	return keep, passed, notes
}

// tempoBookkeeping reports whether a file name is one Tempo writes beside a
// block's data: its meta, bloom filter shards, index and markers.
func tempoBookkeeping(name string) bool {
	switch name {
	case "meta.json", "meta.compacted.json", "index", "flushed", "nocompact.flg":
		return true
	}
	if n, ok := strings.CutPrefix(name, "bloom-"); ok && n != "" {
		_, err := strconv.Atoi(n)
		return err == nil
	}
	return false
}
