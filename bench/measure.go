package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"syscall"
	"time"
)

// contender is one command timed over rounds: its measurements are in
// round order, so that the r-th of two contenders timed back to back in
// one round can be compared (see group).
type contender struct {
	name string
	cmd  []string
	in   string // the input file, read through before each run (see measureWarm)
	m    []measurement
}

type measurement struct {
	wall  time.Duration
	cpu   time.Duration // user + system
	rssMB float64
}

// measure runs one process to completion: wall time from start to exit,
// its CPU time (user + system, its children's included: Node's threads
// are its own) and its peak resident set (ru_maxrss, which Linux gives in
// KiB).
func measure(argv []string) (measurement, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	var errb bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &errb
	t := time.Now()
	err := cmd.Run()
	wall := time.Since(t)
	if err != nil {
		return measurement{}, fmt.Errorf("%v\n%s", err, tail(errb.String(), 2000))
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return measurement{}, errors.New("no rusage on this platform")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return measurement{wall: wall, cpu: cpu, rssMB: float64(ru.Maxrss) * 1024 / 1e6}, nil
}

// measureWarm is measure after reading the input file through, untimed,
// so that every run starts with the file in the page cache. One warm-up
// at the start is not enough: this machine's kernel reclaims pages that
// went unread for a while (DAMON), so after minutes of other contenders
// the first run of a round read part of its file from disk (a JSON-lines
// run took 2.9, 5.6 and 4.0 s in one bench, the contender after it, on
// the pages it had just brought back, 3.6–4.3 s).
func measureWarm(argv []string, in string) (measurement, error) {
	if in != "" {
		if err := warm(in); err != nil {
			return measurement{}, err
		}
	}
	return measure(argv)
}

func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (k *contender) medians() (wall, rss float64) {
	var w, r []float64
	for _, m := range k.m {
		w = append(w, m.wall.Seconds())
		r = append(r, m.rssMB)
	}
	return median(w), median(r)
}

func (k *contender) medianCPU() float64 {
	var c []float64
	for _, m := range k.m {
		c = append(c, m.cpu.Seconds())
	}
	return median(c)
}

// rssRange is the smallest and the largest peak RSS over the rounds.
func (k *contender) rssRange() (lo, hi float64) {
	var r []float64
	for _, m := range k.m {
		r = append(r, m.rssMB)
	}
	if len(r) == 0 {
		return 0, 0
	}
	return slices.Min(r), slices.Max(r)
}

// cpu is the CPU time of every run.
func (k *contender) cpu() time.Duration {
	var t time.Duration
	for _, m := range k.m {
		t += m.cpu
	}
	return t
}
