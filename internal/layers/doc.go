// Package layers holds no code: its test holds the repository's import
// rule (docs/DESIGN.md §11, "Where things live"), read from `go list`, so
// that the data flow the design describes is the one the code has.
package layers
