package clickhouse

// What the external tests use of the package's insides.
var (
	EncodeRowBinary = encodeRowBinary
	AllAliases      = allAliases
)

// The push-down's SQL of a sketch bin.
var (
	BinSQL  = binSQL
	BinWith = binWith
)

// The push-down's trace hash and leading zeros.
var (
	TraceHash32SQL = traceHashSQL
	ClzSQL         = clzSQL
)
