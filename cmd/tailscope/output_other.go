// File ownership where there is no Unix: not known, so nothing to keep.

//go:build !unix

package main

import "os"

// owner is who owns a file and how many names it has; not known here.
type owner struct{ links uint64 }

func ownerOf(os.FileInfo) owner { return owner{links: 1} }

func (owner) keep(string) bool { return true }
