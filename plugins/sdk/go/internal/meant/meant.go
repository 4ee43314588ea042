// Package meant tells which method wasmsched calls a plugin's method was
// probably meant to be (FilterNodes: Filter). A misspelt point is not an
// error to Go: the plugin just lacks the point. The SDK checks the
// registered type with it at load, and plugins/lang/go.sh checks the
// source with it before the build.
package meant

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Method is a method wasmsched calls, with the number of arguments it takes.
type Method struct {
	Name  string
	Args  int
	Point bool // an extension point (not Configure, EventsToRegister, MetricSources or KeepState)
}

// Methods are the methods wasmsched calls on a plugin.
var Methods = []Method{
	{"PreFilter", 1, true},
	{"Filter", 2, true},
	{"PreScore", 2, true},
	{"Score", 2, true},
	{"NormalizeScore", 2, true},
	{"PostFilter", 3, true},
	{"Reserve", 2, true},
	{"Unreserve", 2, true},
	{"Permit", 2, true},
	{"PreBind", 2, true},
	{"PostBind", 2, true},
	{"Configure", 1, false},
	{"EventsToRegister", 0, false},
	{"MetricSources", 0, false},
	{"KeepState", 0, false},
}

// Known is the method wasmsched calls by that name, if any.
func Known(name string) (Method, bool) {
	for _, m := range Methods {
		if m.Name == name {
			return m, true
		}
	}
	return Method{}, false
}

// Guess is the method a method called name, taking args arguments
// (variadic: any number from args-1), was probably meant to be: the same
// letters in another case or with underscores (Normalize_Score), a few
// edits away (Scores, NormaliseScore), or one name inside the other
// (FilterNodes, DoScore, Normalize) when it takes the same arguments.
func Guess(name string, args int, variadic bool) (Method, bool) {
	s := squash(name)
	best, cost := Method{}, -1
	for _, m := range Methods {
		if m.Name == name {
			return Method{}, false
		}
		k := squash(m.Name)
		d := distance(s, k)
		c := -1
		switch {
		case d == 0:
			return m, true
		case d <= 1 || (len(k) > 6 && d <= 2):
			c = d
		case min(len(s), len(k)) >= 5 && (strings.HasPrefix(s, k) || strings.HasSuffix(s, k) || strings.HasPrefix(k, s)):
			c = 10 + abs(len(s)-len(k))
		default:
			continue
		}
		// A helper is told apart by the arguments it takes.
		takes := args == m.Args || (variadic && m.Args >= args-1)
		if takes && (cost < 0 || c < cost) {
			best, cost = m, c
		}
	}
	return best, cost >= 0
}

// Message is the error for method of typ, meant to be m.
func Message(typ, method string, m Method) string {
	what := "an extension point of wasmsched"
	if !m.Point {
		what = "a method wasmsched calls"
	}
	msg := typ + "." + method + " is not " + what + "; did you mean " + m.Name + "?"
	switch {
	case !Exported(method):
		msg += " (wasmsched calls only exported methods)"
	case squash(method) != squash(m.Name):
		msg += " (a helper: unexport it, " + strings.ToLower(method[:1]) + method[1:] + ")"
	}
	return msg
}

// Exported is whether name is exported (go/token's IsExported, whose
// package would bring file system calls into a plugin).
func Exported(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r)
}

func squash(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// distance is the edit distance, a transposition counting as one edit.
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			sub := 1
			if a[i-1] == b[j-1] {
				sub = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+sub)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
