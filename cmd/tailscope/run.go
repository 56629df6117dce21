package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes (contract, DESIGN §2).
const (
	exitOK        = 0
	exitError     = 1 // runtime or input error
	exitUsage     = 2 // bad flags or arguments
	exitViolation = 3 // check found lint errors or failed gates
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

Exit codes: 0 ok, 1 runtime or input error, 2 usage error, 3 check found violations.
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	cmds := commands()
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
		err := c.run(e, args[1:])
		switch {
		case err == nil, errors.Is(err, errHelp):
			return exitOK
		case errors.Is(err, errViolation):
			return exitViolation
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "tailscope %s: %v\nRun 'tailscope %s --help' for usage.\n", c.name, err, c.name)
			return exitUsage
		default:
			fmt.Fprintf(stderr, "tailscope: %v\n", err)
			return exitError
		}
	}
	fmt.Fprintf(stderr, "tailscope: unknown command %q\nRun 'tailscope --help' for the list.\n", args[0])
	return exitUsage
}

const version = "0.1.0"
