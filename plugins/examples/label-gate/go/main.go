// label-gate (Go): a pod that asks for a node class with an annotation (by
// default `cluster.type: raspberry`) only goes to nodes whose label of the
// same key has that value. Pods that ask for nothing pass everywhere.
// The twin of ../rust/src/lib.rs.
//
// Args: {"key": "cluster.type"} (the default).
package main

import (
	"errors"

	"github.com/wasmsched/wasmsched/plugins/sdk/go/wasmsched"
)

type labelGate struct{ key string }

func (g *labelGate) Configure(args wasmsched.Args) (err error) {
	if g.key, err = args.String("key", "cluster.type"); err != nil {
		return err
	}
	if g.key == "" {
		return errors.New("args.key: must not be empty")
	}
	return nil
}

// PreFilter: pods that ask for no class skip the filter.
func (g *labelGate) PreFilter(pod wasmsched.Pod) (wasmsched.Status, error) {
	if _, ok := pod.Annotation(g.key); ok {
		return wasmsched.Ok(), nil
	}
	return wasmsched.Skipped(), nil
}

func (g *labelGate) Filter(pod wasmsched.Pod, nodes wasmsched.Nodes) ([]wasmsched.Rejection, error) {
	want, ok := pod.Annotation(g.key)
	if !ok {
		return nil, nil
	}
	reason := "node(s) were not of the requested " + g.key + " " + want
	var rejected []wasmsched.Rejection
	for i, v := range nodes.LabelValues(g.key) {
		if !v.Ok || v.Value != want {
			rejected = append(rejected, wasmsched.RejectUnresolvable(i, reason))
		}
	}
	return rejected, nil
}

func init() { wasmsched.Register("label-gate", "0.1.0", &labelGate{}) }

func main() {}
