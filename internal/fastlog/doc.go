// Package fastlog is the natural and decimal logarithms of values at least
// 1, bit for bit what package math gives, without its call: the tail fit's
// E step takes a logarithm per bin and iteration (package tail), and the
// latency histograms one per value (package analyze). On amd64 it writes
// out the steps of math.Log's assembly; elsewhere it is math.Log.
package fastlog
