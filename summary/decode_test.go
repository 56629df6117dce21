package summary_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/summary"
)

// small is the summary of the seed sample (and a few bad lines).
func small(t testing.TB) []byte {
	t.Helper()
	dir := t.TempDir()
	files := writeChunks(t, dir, rand.New(rand.NewPCG(1, 1)), generate(5, genOptions{traces: 40, dbAttempts: 3, loose: true, bad: true}), 2)
	s, err := pipeline.Summarize(append(files, "../samples/seed-chain/spans.jsonl"), pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return summary.Encode(s)
}

// resum recomputes the checksum of a summary changed in place, as
// someone editing it on purpose would.
func resum(b []byte) []byte {
	const trailer = 4 + 8 + sha256.Size
	sum := sha256.Sum256(b[:len(b)-trailer])
	copy(b[len(b)-sha256.Size:], sum[:])
	return b
}

// section returns the offset of a section's payload.
func section(t *testing.T, b []byte, kind string) int {
	at := len(summary.Magic) + 2
	for at+12 <= len(b) {
		n := int(binary.LittleEndian.Uint64(b[at+4:]))
		if string(b[at:at+4]) == kind {
			return at + 12
		}
		at += 12 + n
	}
	t.Fatalf("no %s section", kind)
	return 0
}

// Bad summaries are errors naming the file, never a panic: cut short
// anywhere, from a newer or an unknown version, changed (with or without
// a new checksum).
func TestBadSummaries(t *testing.T) {
	good := small(t)
	dir := t.TempDir()
	hops := section(t, good, "HOPS")
	cases := []struct {
		name string
		b    func() []byte
		want string
	}{
		{"newer", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint16(b[len(summary.Magic):], summary.Version+1)
			return b
		}, "newer tailscope"},
		{"version 0", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint16(b[len(summary.Magic):], 0)
			return b
		}, "not one tailscope ever wrote"},
		{"flipped bit", func() []byte {
			b := bytes.Clone(good)
			b[hops+5] ^= 1
			return b
		}, "checksum mismatch"},
		{"tampered attempts, checksum redone", func() []byte {
			b := bytes.Clone(good)
			// HOPS: count, then the first hop's name and its attempts.
			at := hops + 1
			at += 1 + int(b[at])
			if b[at]&0x7f == 0x7f {
				t.Fatal("attempts byte would carry")
			}
			b[at]++
			return resum(b)
		}, "do not match"},
		{"not a summary", func() []byte { return []byte("{\"trace_id\":1}\n") }, "not a tailscope summary"},
		{"header only", func() []byte { return bytes.Clone(good[:len(summary.Magic)+2]) }, "truncated"},
		{"no checksum", func() []byte { return bytes.Clone(good[:len(good)-40]) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad-"+strings.ReplaceAll(c.name, " ", "-")+".tss")
			if err := os.WriteFile(p, c.b(), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := summary.ReadFile(p)
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %s and saying %q", err, p, c.want)
			}
			if c.name == "newer" && !errors.Is(err, summary.ErrNewer) {
				t.Errorf("%v is not ErrNewer", err)
			}
			// Through the readers of analyze, recommend and check too.
			if c.name != "not a summary" {
				if _, err := pipeline.Read([]string{p}, pipeline.Options{}); err == nil || !strings.Contains(err.Error(), p) {
					t.Errorf("pipeline.Read: %v", err)
				}
			}
		})
	}
	// Cut short anywhere.
	for n := range len(good) {
		if _, err := summary.Decode(good[:n]); err == nil {
			t.Fatalf("a summary cut to %d of %d bytes decodes", n, len(good))
		}
	}
}

// tiny is the summary of a few generated traces, loose spans and bad
// lines: a seed small enough for the fuzzer to mutate quickly.
func tiny(t testing.TB) []byte {
	t.Helper()
	files := writeChunks(t, t.TempDir(), rand.New(rand.NewPCG(1, 1)), generate(5, genOptions{traces: 4, dbAttempts: 3, loose: true, bad: true}), 2)
	s, err := pipeline.Summarize(files, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return summary.Encode(s)
}

// FuzzDecode: no input panics the decoder; what decodes holds only values
// a reader could give and reports no impossible figure; and it encodes
// back to a summary that decodes to the same bytes.
func FuzzDecode(f *testing.F) {
	good := tiny(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(resum(bytes.Clone(good)))
	// Edited summaries with impossible values, re-summed: the decoder
	// must refuse them, and the fuzzer starts from them to reach the
	// checks of decoded values.
	for _, c := range impossible {
		if b := edited(f, good, c.edit); b != nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := summary.Decode(b); err == nil && len(b) < 4+8+sha256.Size {
			t.Fatal("decoded a summary too short for its checksum")
		}
		// Random changes rarely keep the checksum right: decode the input
		// with its checksum redone too, to reach the sections' decoders.
		if len(b) < 4+8+sha256.Size {
			return
		}
		s, err := summary.Decode(resum(bytes.Clone(b)))
		if err != nil {
			return
		}
		plausibleDecoded(t, s)
		e := summary.Encode(s)
		s2, err := summary.Decode(e)
		if err != nil {
			t.Fatalf("re-encoded summary does not decode: %v", err)
		}
		if !bytes.Equal(summary.Encode(s2), e) {
			t.Fatal("re-encoding is not stable")
		}
	})
}
