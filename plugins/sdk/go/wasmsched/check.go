package wasmsched

import (
	"fmt"
	"reflect"
	"strings"
)

// checkMethods finds the point methods of p that Go accepts but that leave
// the plugin without the point: one with another signature than the
// point's (Go then does not count it as the point), one with a pointer
// receiver on a plugin registered by value. (Misspelt names are checked
// in the source before the build, by internal/check: listing a type's
// methods here would make the linker keep every exported method of every
// type, and the file system calls they reach.)
func checkMethods(p Plugin) []string {
	t := reflect.TypeOf(p)
	typ := t.String() // *main.plugin
	typ = typ[strings.LastIndexByte(typ, '.')+1:]
	var problems []string
	check := func(name, signature string, iface reflect.Type, found, byPointer bool) {
		switch {
		case found && !t.Implements(iface):
			problems = append(problems, fmt.Sprintf("%s.%s has the wrong signature for wasmsched: want %s%s",
				typ, name, name, signature))
		case !found && byPointer:
			problems = append(problems, fmt.Sprintf("%s.%s has a pointer receiver but the plugin is registered by value: register &%s{}",
				typ, name, typ))
		}
	}
	// Constant names: the linker then keeps only the methods of those names.
	pt := t
	if t.Kind() != reflect.Pointer {
		pt = reflect.PointerTo(t)
	}
	_, ok := t.MethodByName("PreFilter")
	_, viaPtr := pt.MethodByName("PreFilter")
	check("PreFilter", "(wasmsched.Pod) (wasmsched.Status, error)", reflect.TypeFor[PreFilterer](), ok, viaPtr)
	_, ok = t.MethodByName("Filter")
	_, viaPtr = pt.MethodByName("Filter")
	check("Filter", "(wasmsched.Pod, wasmsched.Nodes) ([]wasmsched.Rejection, error)", reflect.TypeFor[Filterer](), ok, viaPtr)
	_, ok = t.MethodByName("PreScore")
	_, viaPtr = pt.MethodByName("PreScore")
	check("PreScore", "(wasmsched.Pod, wasmsched.Nodes) (wasmsched.Status, error)", reflect.TypeFor[PreScorer](), ok, viaPtr)
	_, ok = t.MethodByName("Score")
	_, viaPtr = pt.MethodByName("Score")
	check("Score", "(wasmsched.Pod, wasmsched.Nodes) ([]int64, error)", reflect.TypeFor[Scorer](), ok, viaPtr)
	_, ok = t.MethodByName("NormalizeScore")
	_, viaPtr = pt.MethodByName("NormalizeScore")
	check("NormalizeScore", "(wasmsched.Pod, []int64) ([]int64, error)", reflect.TypeFor[ScoreNormalizer](), ok, viaPtr)
	_, ok = t.MethodByName("PostFilter")
	_, viaPtr = pt.MethodByName("PostFilter")
	check("PostFilter", "(wasmsched.Pod, wasmsched.Nodes, []wasmsched.NodeStatus) (wasmsched.PostFilterResult, error)", reflect.TypeFor[PostFilterer](), ok, viaPtr)
	_, reserve := t.MethodByName("Reserve")
	_, viaPtr = pt.MethodByName("Reserve")
	check("Reserve", "(wasmsched.Pod, wasmsched.Nodes) (wasmsched.Status, error)", reflect.TypeFor[reserver](), reserve, viaPtr)
	_, unreserve := t.MethodByName("Unreserve")
	_, viaPtr = pt.MethodByName("Unreserve")
	check("Unreserve", "(wasmsched.Pod, string)", reflect.TypeFor[unreserver](), unreserve, viaPtr)
	// Reserve and Unreserve are one point: either alone is none.
	switch {
	case reserve && !unreserve && t.Implements(reflect.TypeFor[reserver]()):
		problems = append(problems, fmt.Sprintf("%s.Reserve needs Unreserve(wasmsched.Pod, string) too, which undoes it", typ))
	case unreserve && !reserve && t.Implements(reflect.TypeFor[unreserver]()):
		problems = append(problems, fmt.Sprintf("%s.Unreserve needs Reserve(wasmsched.Pod, wasmsched.Nodes) (wasmsched.Status, error) too", typ))
	}
	_, ok = t.MethodByName("Permit")
	_, viaPtr = pt.MethodByName("Permit")
	check("Permit", "(wasmsched.Pod, wasmsched.Nodes) (wasmsched.PermitVerdict, error)", reflect.TypeFor[Permitter](), ok, viaPtr)
	_, ok = t.MethodByName("PreBind")
	_, viaPtr = pt.MethodByName("PreBind")
	check("PreBind", "(wasmsched.Pod, string) (wasmsched.Status, error)", reflect.TypeFor[PreBinder](), ok, viaPtr)
	_, ok = t.MethodByName("PostBind")
	_, viaPtr = pt.MethodByName("PostBind")
	check("PostBind", "(wasmsched.Pod, string)", reflect.TypeFor[PostBinder](), ok, viaPtr)
	_, ok = t.MethodByName("KeepState")
	_, viaPtr = pt.MethodByName("KeepState")
	check("KeepState", "() bool", reflect.TypeFor[StateKeeper](), ok, viaPtr)
	_, ok = t.MethodByName("EventsToRegister")
	_, viaPtr = pt.MethodByName("EventsToRegister")
	check("EventsToRegister", "() []wasmsched.ClusterEvent", reflect.TypeFor[EnqueueExtensions](), ok, viaPtr)
	_, ok = t.MethodByName("MetricSources")
	_, viaPtr = pt.MethodByName("MetricSources")
	check("MetricSources", "() []string", reflect.TypeFor[MetricSourcer](), ok, viaPtr)
	return problems
}

// The halves of Reserver, checked one by one.
type reserver interface {
	Reserve(pod Pod, nodes Nodes) (Status, error)
}

type unreserver interface {
	Unreserve(pod Pod, node string)
}
