// Package samples embeds the seed sample that `tailscope demo` runs on: the
// source article's 200-request, 3-hop latency matrix (see package matrix)
// and its five policies A–E. The files are written by ./gen; regenerate them
// with `go generate ./samples` after changing the generator.
package samples

import "embed"

//go:generate go run ./gen seed-chain

// SeedChain holds seed-chain/spans.jsonl (true latencies),
// seed-chain/recorded-under-A.jsonl (as config A logged them) and
// seed-chain/{A,B,C,D,E}.yaml.
//
//go:embed seed-chain
var SeedChain embed.FS

// Policies are the names of the seed policies, in table order.
var Policies = []string{"A", "B", "C", "D", "E"}
