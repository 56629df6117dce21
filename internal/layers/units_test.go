package layers

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"testing"
)

// TestOneMsConversion: the packages after the read convert between
// nanoseconds and milliseconds only through internal/units (Ms, MsOf,
// NsOfMs, FromMs), never by an inline × or ÷ 1e6: one conversion, so that
// a figure computed in two places is the same to the bit and a reader of
// the code finds every millisecond by one name. (The readers parse a
// log's own units, ms and µs and s fields, in their decoders: that is
// input, not a figure of the report, and stays theirs.)
func TestOneMsConversion(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	for _, pkg := range []string{"analyze", "recommend", "replay", "check", "report", "policy", "pipeline", "summary", "bound", "tail", "route", "enforce", "outcome"} {
		if _, err := os.Stat(filepath.Join(root, pkg)); err != nil {
			t.Fatalf("package %s not found: update the list", pkg)
		}
		for _, f := range prodFiles(t, fset, filepath.Join(root, pkg)) {
			ast.Inspect(f, func(n ast.Node) bool {
				be, ok := n.(*ast.BinaryExpr)
				if !ok || (be.Op != token.MUL && be.Op != token.QUO) {
					return true
				}
				for _, side := range []ast.Expr{be.X, be.Y} {
					if lit, ok := side.(*ast.BasicLit); ok && lit.Kind == token.FLOAT && lit.Value == "1e6" {
						t.Errorf("%s: an inline %s 1e6: convert through internal/units (Ms, MsOf, NsOfMs, FromMs)", fset.Position(be.Pos()), be.Op)
					}
				}
				return true
			})
		}
	}
}
