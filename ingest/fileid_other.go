//go:build !unix

package ingest

import (
	"io/fs"
)

// fileID is a file's identity: the same file or directory reached by two
// paths (a symbolic link, a loop) has one. Here it is the path with every
// link resolved.
type fileID struct {
	dev, ino uint64
	path     string
}

func idOf(path string, _ fs.FileInfo) (fileID, bool) { return realPathID(path) }
