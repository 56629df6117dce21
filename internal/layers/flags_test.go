package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// flagLiterals are the flag-name literals still allowed outside cmd/, by
// package folder: each an exception to empty, not a rule. A package is
// listed only with the flags it still spells.
var flagLiterals = map[string][]string{
	// bench is a tool that runs the binary: its flags are arguments to
	// tailscope, not words of a library's message.
	"bench": {"--format", "--max-hops"},
	// The reasons the read filters a span out ("outside --since/--until",
	// "in an --exclude-window") are keys: of the JSON report's
	// filtered_by_reason and of the stats a partial summary stores
	// (contracts, §8 and §12), so they keep their words.
	"ingest/internal/record": {"--exclude-window", "--since", "--until"},
	// The hop definition a partial summary stores (summary.HopDefOf, §12)
	// is written in the flags' words, and files already written hold it:
	// a format, not a message; it cannot follow a flag's rename. ErrHopDef
	// ("different --hop-by or --map") speaks the same words as the
	// definitions it prints beside it; naming them by option.Names would
	// need a Names in Merge, whose callers include the beam module.
	"summary": {"--hop-by", "--map"},
}

var flagToken = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// cmdFlags reads the flags cmd/tailscope defines: the name given to each
// call of a flag set's String, StringVarP, DurationVar, Var, ….
func cmdFlags(t *testing.T, dir string) map[string]bool {
	t.Helper()
	define := regexp.MustCompile(`^(Bool|String|StringArray|StringSlice|Int|Int64|Uint|Uint64|Float64|Duration|Count|Func|BoolFunc|Text)?(Var)?P?$`)
	name := regexp.MustCompile(`^[a-z][a-z0-9-]+$`)
	fset := token.NewFileSet()
	flags := map[string]bool{}
	for _, f := range prodFiles(t, fset, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name == "" || !define.MatchString(sel.Sel.Name) {
				return true
			}
			for _, a := range call.Args[:min(2, len(call.Args))] {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && name.MatchString(s) {
						flags[s] = true
						break
					}
				}
			}
			return true
		})
	}
	return flags
}

// TestNoFlagNamesOutsideCmd: no package but cmd/tailscope spells one of
// its flags in a string (architecture III, item 6). Libraries speak of
// options (package option) and cmd/tailscope passes the names of its
// flags in (flagNames), so that a flag renamed is renamed in cmd alone.
// Tests are not scanned: they may check what the binary prints.
func TestNoFlagNamesOutsideCmd(t *testing.T) {
	root := filepath.Join("..", "..")
	flags := cmdFlags(t, filepath.Join(root, "cmd", "tailscope"))
	for _, f := range []string{"hop-by", "map", "max-record", "fetch-timeout", "since"} {
		if !flags[f] {
			t.Fatalf("cmd/tailscope's flags as read here lack --%s (read %d): the reading of flag definitions is broken", f, len(flags))
		}
	}
	isFlag := func(tok string) bool {
		name := strings.TrimPrefix(tok, "--")
		if flags[name] {
			return true
		}
		if strings.HasSuffix(name, "-") { // a family: --fetch-…
			for f := range flags {
				if strings.HasPrefix(f, name) {
					return true
				}
			}
		}
		return false
	}
	fset := token.NewFileSet()
	found := map[string]map[string]bool{} // package → flags spelled
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// A cmd folder holds commands (cmd/tailscope, beam's
			// cmd/tailscope-beam), which spell their own flags.
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules" || n == "cmd") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			for _, tok := range flagToken.FindAllString(lit.Value, -1) {
				if !isFlag(tok) {
					continue
				}
				if found[pkg] == nil {
					found[pkg] = map[string]bool{}
				}
				found[pkg][tok] = true
				if !slices.Contains(flagLiterals[pkg], tok) {
					t.Errorf("%s: %s spells a flag of cmd/tailscope: name the setting with option.Names (the caller's), not the flag", fset.Position(lit.Pos()), tok)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The allow-list shrinks as packages convert: an entry no longer
	// needed is an error, so that it cannot outlive its reason.
	for pkg, toks := range flagLiterals {
		for _, tok := range toks {
			if !found[pkg][tok] {
				t.Errorf("flagLiterals[%q] allows %s, which it no longer spells: remove it", pkg, tok)
			}
		}
	}
}
