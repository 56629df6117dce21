// File ownership on Unix: the owner, group and link count that an atomic rewrite keeps.

//go:build unix

package main

import (
	"os"
	"syscall"
)

// owner is who owns a file and how many names it has.
type owner struct {
	uid, gid int
	links    uint64
	known    bool
}

func ownerOf(fi os.FileInfo) owner {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return owner{links: 1}
	}
	return owner{uid: int(st.Uid), gid: int(st.Gid), links: uint64(st.Nlink), known: true}
}

// keep gives the file at name this owner and group, reporting whether it
// now has them (a user may give a file only a group of their own; only
// root may give it away).
func (o owner) keep(name string) bool {
	if !o.known {
		return true
	}
	fi, err := os.Stat(name)
	if err != nil {
		return false
	}
	now := ownerOf(fi)
	if now.uid == o.uid && now.gid == o.gid {
		return true
	}
	return os.Chown(name, o.uid, o.gid) == nil
}
