package source

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/source/sourcetest"
)

// TestBoundedMemory: however long the window and however slow the reader,
// no slice is started while 2×Concurrency finished ones wait to be
// written, so at most 3×Concurrency−1 wait (those, and the ones in flight
// then): memory does not grow with the window.
func TestBoundedMemory(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	srv := sourcetest.Zipkin(t, sourcetest.Gen(11, 400, t0, 10*time.Minute))
	s, err := Open(context.Background(), "zipkin://"+strings.TrimPrefix(srv.URL, "http://"), Options{Since: t0, Until: t0.Add(10 * time.Minute), Slice: 2 * time.Second, Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf := make([]byte, 512)
	for {
		_, err := s.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Microsecond) // a reader slower than the fetch
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	if s.f.prog.Done != 300 || s.f.held > 3*3-1 || s.f.held == 0 {
		t.Errorf("%d slices done, at most %d held at once; want 300, 1–8", s.f.prog.Done, s.f.held)
	}
}
