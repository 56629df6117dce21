// Package units writes the numbers tailscope shows people: durations,
// percentages, percentiles, counts with their nouns. Every report,
// finding, warning, policy comment and emitted config takes its format
// from here, so that one value reads the same wherever it is printed and a
// format is changed in one place.
//
// Some values are written in two ways on purpose, and both are kept here,
// side by side, under names that say how they differ: a duration for a
// person (Duration) and for a config reader (GoDuration, DecimalSeconds);
// a percentile to three decimals (PercentileRounded) and one that never
// reads p100 below 100 (Percentile); a whole percentage rounded half away
// from zero (PercentWhole) and half to even (PercentWholeEven). Changing
// which one a caller uses changes what it prints.
//
// It is a leaf: it imports only the standard library, so that every
// package from analyze to cmd can use it without an import running back
// up the data flow.
package units
