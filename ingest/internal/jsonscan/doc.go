// Package jsonscan is the JSON byte scanner every JSON reader of ingest
// decodes with (flat JSON lines, OTLP, Jaeger and Zipkin JSON): a small
// tokenizer over one in-memory record (Scanner), the word-at-a-time
// lexing helpers of the readers' fast paths (PlainString, HasLit), and
// the line helpers of the readers that cut an input into lines.
//
// It is apart from ingest/internal/record, which holds the record model
// the decoders write into, because it is a lexer, not a model: it knows
// bytes and JSON tokens, nothing of spans, options or statistics, and it
// imports nothing but the standard library. The readers that use it link
// nothing of the Parquet or Arrow readers through it.
package jsonscan
