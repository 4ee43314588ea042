// Command check reports the methods of a plugin's source that Go accepts
// but wasmsched would never call, their name being not quite a point's
// (FilterNodes, Scores, an unexported score), as FILE:LINE:COL: message,
// and exits 1 if there is any. plugins/lang/go.sh runs it on the plugin's
// directory before the build, natively: a misspelt point is no Go error,
// the plugin would just lack the point. The SDK checks the registered
// value at load too (and the points' signatures, which need types).
//
//	check DIR
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wasmsched/wasmsched/plugins/sdk/go/internal/meant"
)

type method struct {
	name     string
	args     int
	variadic bool
	pos      token.Pos
}

func main() {
	dir := os.Args[1]
	fset := token.NewFileSet()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	byType := map[string][]method{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return // the build reports it
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
				continue
			}
			m := method{name: fd.Name.Name, pos: fd.Name.Pos()}
			for _, p := range fd.Type.Params.List {
				m.args += max(len(p.Names), 1)
				_, m.variadic = p.Type.(*ast.Ellipsis)
			}
			t := receiver(fd.Recv.List[0].Type)
			byType[t] = append(byType[t], m)
		}
	}
	var problems []string
	for typ, methods := range byType {
		// A plugin type has Configure (wasmsched.Register takes no other).
		if !has(methods, "Configure") {
			continue
		}
		for _, m := range methods {
			if _, known := meant.Known(m.name); known {
				continue
			}
			want, ok := meant.Guess(m.name, m.args, m.variadic)
			// Unexported: only a point's very name, with its arguments.
			if !ok || (!token.IsExported(m.name) && (!strings.EqualFold(m.name, want.Name) || m.args != want.Args)) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(m.pos), meant.Message(typ, m.name, want)))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

// receiver is the name of a receiver's type: T for T, *T, T[X], *T[X].
func receiver(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func has(methods []method, name string) bool {
	for _, m := range methods {
		if m.name == name {
			return true
		}
	}
	return false
}
