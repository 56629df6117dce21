package clickhouse

// What the external tests use of the package's insides.
var (
	EncodeRowBinary = encodeRowBinary
	AllAliases      = allAliases
)
