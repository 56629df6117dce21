//go:build unix

package ingest

import (
	"io/fs"
	"syscall"
)

// fileID is a file's identity: the same file or directory reached by two
// paths (a symbolic link, a loop) has one.
type fileID struct {
	dev, ino uint64
	path     string // where the platform gives no device and inode
}

func idOf(path string, fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return realPathID(path)
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}
