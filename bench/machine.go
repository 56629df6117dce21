package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machineState is what the kernel says about the machine at one moment:
// the load averages and the CPU time spent so far, all CPUs together, by
// kind. Two states taken around the timed runs say how quiet they were:
// the CPU time spent that the measured processes did not spend is other
// work's, so a result taken on a busy machine says so.
type machineState struct {
	at        time.Time
	load      [3]float64 // 1, 5 and 15 minutes; -1 when unknown
	runnable  string     // running/total scheduling entities, from /proc/loadavg
	cpu       cpuTimes
	cpuKnown  bool
	loadKnown bool
	self      time.Duration // the bench's own CPU time (generating files, waiting)
}

// cpuTimes is the first line of /proc/stat, in clock ticks.
type cpuTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
}

func (c cpuTimes) total() uint64 {
	return c.user + c.nice + c.system + c.idle + c.iowait + c.irq + c.softirq + c.steal
}

// clockTicks is USER_HZ, the unit of /proc/stat: 100 on every Linux
// architecture Go runs on.
const clockTicks = 100

func readMachineState() machineState {
	s := machineState{at: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 4 {
			s.loadKnown = true
			for i := range s.load {
				s.load[i], _ = strconv.ParseFloat(f[i], 64)
			}
			s.runnable = f[3]
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		s.cpu, s.cpuKnown = parseCPULine(line)
	}
	return s
}

// parseCPULine reads the aggregate "cpu" line of /proc/stat; fields a
// kernel does not report (steal before 2.6.11) are zero.
func parseCPULine(line string) (cpuTimes, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var v [8]uint64
	for i := range v {
		if i+1 < len(f) {
			n, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return cpuTimes{}, false
			}
			v[i] = n
		}
	}
	return cpuTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}, true
}

func (s machineState) loadString() string {
	if !s.loadKnown {
		return "unknown"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", s.load[0], s.load[1], s.load[2])
}

// cpuShare describes the CPU time between two states: the share of the
// machine's time each kind took, and how much busy time (not idle, not
// iowait) neither the measured processes (ours: their user and system
// time) nor the bench itself account for: other work on the machine.
func cpuShare(a, b machineState, ours time.Duration) string {
	if !a.cpuKnown || !b.cpuKnown || b.cpu.total() <= a.cpu.total() {
		return "CPU time: unknown (no /proc/stat)"
	}
	d := func(x, y uint64) float64 { return float64(y - x) }
	tot := d(a.cpu.total(), b.cpu.total())
	pct := func(x float64) float64 { return 100 * x / tot }
	user := d(a.cpu.user+a.cpu.nice, b.cpu.user+b.cpu.nice)
	sys := d(a.cpu.system+a.cpu.irq+a.cpu.softirq, b.cpu.system+b.cpu.irq+b.cpu.softirq)
	steal := d(a.cpu.steal, b.cpu.steal)
	iowait := d(a.cpu.iowait, b.cpu.iowait)
	idle := d(a.cpu.idle, b.cpu.idle)
	busy := (user + sys) / clockTicks // seconds
	self := (b.self - a.self).Seconds()
	others := max(busy-ours.Seconds()-self, 0)
	wall := b.at.Sub(a.at).Seconds()
	return fmt.Sprintf("CPU over the timed runs (%.0f s, /proc/stat, all CPUs): user %.1f%%, system %.1f%%, iowait %.1f%%, steal %.1f%%, idle %.1f%%; "+
		"the measured processes used %.1f s of CPU, the bench itself %.1f s, everything else %.1f s (%.2f CPUs on average)",
		wall, pct(user), pct(sys), pct(iowait), pct(steal), pct(idle), ours.Seconds(), self, others, others/wall)
}

// versions names the Go toolchain that built tailscope and, when node is
// used, Node's and DuckDB's versions (DuckDB asked with SELECT version()).
func versions(duckDir string) string {
	v := "Go " + goVersion()
	if duckDir == "" {
		return v
	}
	node := "unknown"
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		node = strings.TrimSpace(string(out))
	}
	duck := "unknown"
	script := filepath.Join(duckDir, "version.mjs")
	if err := os.WriteFile(script, []byte(versionScript), 0o644); err == nil {
		if out, err := exec.Command("node", script).Output(); err == nil {
			duck = strings.TrimSpace(string(out))
		}
	}
	return fmt.Sprintf("%s; DuckDB %s (@duckdb/node-api on Node %s)", v, duck, node)
}

// goVersion is the version of the go command that builds the binary under
// test (the bench itself may run on another).
func goVersion() string {
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			return s
		}
	}
	return runtime.Version()
}

const versionScript = `import { DuckDBInstance } from '@duckdb/node-api';
const conn = await (await DuckDBInstance.create(':memory:')).connect();
console.log((await conn.runAndReadAll('SELECT version()')).getRows()[0][0]);
`

// machineLines are the summary's first lines: the hardware, the versions,
// the load averages at the start, before the timed runs and after them,
// and the CPU time spent between the last two.
func machineLines(threads int, vers string, start, before, after machineState, ours time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s, %d CPUs (GOMAXPROCS %d), %s; %s", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), memTotal(), vers)
	if threads > 0 {
		fmt.Fprintf(&b, "; DuckDB threads %d", threads)
	}
	fmt.Fprintf(&b, "\nLoad average (1, 5, 15 min): %s at start, %s before the timed runs, %s after (runnable/all tasks: %s, %s)\n",
		start.loadString(), before.loadString(), after.loadString(), before.runnable, after.runnable)
	fmt.Fprintf(&b, "%s\n", cpuShare(before, after, ours))
	fmt.Fprintf(&b, "Peak RSS of the bench process: %.0f MB (the floor of every peak RSS below: a child starts from its parent's)\n", peakRSS())
	return b.String()
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	var kb int64
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemTotal:") {
			fmt.Sscanf(strings.TrimPrefix(l, "MemTotal:"), "%d", &kb)
		}
	}
	return fmt.Sprintf("%.0f GB RAM", float64(kb)/1e6)
}

// peakRSS is the bench's own peak RSS in MB (VmHWM; 0 when unknown):
// the floor of every peak RSS measured, as a process os/exec starts
// inherits its parent's peak as the start of its own.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb * 1024 / 1e6
		}
	}
	return 0
}
