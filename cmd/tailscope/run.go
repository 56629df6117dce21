// The command table, dispatch, usage and exit codes, and the recovery of a panicking command.

package main

import (
	"errors"
	"fmt"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/report"
	"io"
	"runtime/debug"
	"strings"
)

// Exit codes (contract, docs/DESIGN.md §2). Besides these, a process ended by a
// signal exits 128 + its number (130 SIGINT, 143 SIGTERM: main.go), and
// a crash the run cannot recover from (a fatal runtime error, a panic on
// another goroutine) aborts with SIGABRT: 134. None of them is 2, which
// says only that the command line is wrong.
const (
	exitOK        = 0
	exitError     = 1 // runtime or input error
	exitUsage     = 2 // bad flags or arguments
	exitViolation = 3 // check found lint errors or failed gates
	exitInternal  = 4 // a bug: the command panicked
)

// usageError marks an error that is the user's invocation, not the input.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// errViolation is returned by check when the verdict is fail; the report
// has already been written.
var errViolation = errors.New("check failed")

// errHelp is returned when --help was asked for and printed.
var errHelp = errors.New("help")

// internalError is a panic of a command, recovered.
type internalError struct {
	value any
	stack []byte
}

func (e internalError) Error() string { return fmt.Sprint("internal error: ", e.value) }

type command struct {
	name, summary string
	run           func(env *env, args []string) error
}

func commands() []command {
	return []command{
		{"analyze", "per-hop latency, failure classes and a recommendation from span logs", runAnalyze},
		{"check", "lint and replay proposed policies against the logs (CI gate)", runCheck},
		{"recommend", "write the recommended policy file", runRecommend},
		{"convert", "convert any supported input to tailscope's flat span schema", runConvert},
		{"summarize", "write the analysis state of some logs to a partial summary (.tss)", runSummarize},
		{"merge", "combine partial summaries into one", runMerge},
		{"pull", "save a window of traces from Jaeger, Tempo or Zipkin for later runs", runPull},
		{"demo", "run check on the embedded seed sample with the article's configs A–E", runDemo},
	}
}

// env is what a command may touch: its streams, nothing global.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

const topUsage = `tailscope — set timeouts and retries from what your traces show.

Usage:
  tailscope <command> [flags] PATH...

Commands:
%s
Run 'tailscope <command> --help' for a command's flags.

Exit codes: 0 ok, 1 runtime or input error, 2 usage error, 3 check found violations,
4 internal error (a bug), 130/143 interrupted by SIGINT/SIGTERM (temporary files
removed), 134 crashed (a bug).
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(commands(), args, stdin, stdout, stderr)
}

// runWith runs one of cmds. Everything it prints on stderr goes through
// visible: names, headers and values from the input cannot drive the
// terminal.
func runWith(cmds []command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		var b strings.Builder
		for _, c := range cmds {
			fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
		}
		w := stdout
		code := exitOK
		if len(args) == 0 {
			w, code = stderr, exitUsage
		}
		fmt.Fprintf(w, topUsage, b.String())
		return code
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "tailscope", version)
		return exitOK
	}
	for _, c := range cmds {
		if c.name != args[0] {
			continue
		}
		err := runCommand(c, e, args[1:])
		var ie internalError
		switch {
		case err == nil, errors.Is(err, errHelp):
			return exitOK
		case errors.Is(err, errViolation):
			return exitViolation
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "tailscope %s: %s\nRun 'tailscope %s --help' for usage.\n", c.name, visible(err.Error()), c.name)
			return exitUsage
		case errors.As(err, &ie):
			fmt.Fprintf(stderr, "tailscope: %s\nThis is a bug in tailscope %s; please report it with the command line and this trace:\n%s",
				visible(ie.Error()), version, visible(string(ie.stack)))
			return exitInternal
		default:
			fmt.Fprintf(stderr, "tailscope: %s\n", visible(err.Error()))
			return exitError
		}
	}
	fmt.Fprintf(stderr, "tailscope: unknown command %s\nRun 'tailscope --help' for the list.\n", visible(fmt.Sprintf("%q", args[0])))
	return exitUsage
}

// runCommand runs c, turning a panic into an internalError after removing
// what the run had in flight (temporary files).
func runCommand(c command, e *env, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			runCleanups()
			// The readers' spills too; not TempFiles.Cleanup, which
			// refuses new files for good: that is for a process that ends.
			for _, p := range ingest.TempFiles.Paths() {
				ingest.TempFiles.Remove(p)
			}
			err = internalError{value: r, stack: debug.Stack()}
		}
	}()
	return c.run(e, args)
}

// visible makes text for stderr safe to print (report.VisibleLines).
func visible(s string) string { return report.VisibleLines(s) }

const version = "0.1.0"
