package record

import "fmt"

// NoPanic turns a panic of a third-party decoder on corrupt input into an
// error: a malformed file must never take the run down.
func NoPanic(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("corrupt %s file: %v", what, r)
	}
}
