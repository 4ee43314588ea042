// {{name}}: holds the pods of a gang at Permit until enough of them are
// placed, then lets them all bind (args {"label": ..., "size": ...},
// default "wasmsched.io/gang" and 2). The count lives in the host's store
// (wasmsched.Store): a plugin's instances are pooled and may run at once,
// so Go variables are not shared between calls.
package main

import (
	"time"

	"github.com/wasmsched/wasmsched/plugins/sdk/go/wasmsched"
)

type plugin struct {
	label string
	size  int64
}

func (p *plugin) Configure(args wasmsched.Args) (err error) {
	if p.label, err = args.String("label", "wasmsched.io/gang"); err != nil {
		return err
	}
	size, err := args.Number("size", 2)
	p.size = int64(size)
	return err
}

// Reserve counts the pod in its gang; Unreserve undoes it.
func (p *plugin) Reserve(pod wasmsched.Pod, _ wasmsched.Nodes) (wasmsched.Status, error) {
	gang, ok := pod.Label(p.label)
	if !ok {
		return wasmsched.Ok(), nil
	}
	if err := wasmsched.Store.Set("member/"+pod.UID(), []byte(gang)); err != nil {
		return wasmsched.Status{}, err
	}
	if _, err := wasmsched.Store.Add("gang/"+gang, 1); err != nil {
		wasmsched.Store.Remove("member/" + pod.UID())
		return wasmsched.Status{}, err
	}
	return wasmsched.Ok(), nil
}

func (p *plugin) Unreserve(pod wasmsched.Pod, _ string) {
	if gang, ok := pod.Label(p.label); ok && wasmsched.Store.Remove("member/"+pod.UID()) {
		wasmsched.Store.Add("gang/"+gang, -1)
	}
}

// Permit holds the pod (with its node) until its gang has size pods
// placed, then releases the others waiting.
func (p *plugin) Permit(pod wasmsched.Pod, _ wasmsched.Nodes) (wasmsched.PermitVerdict, error) {
	gang, ok := pod.Label(p.label)
	if !ok {
		return wasmsched.Allow(), nil
	}
	placed, err := wasmsched.Store.Counter("gang/" + gang)
	if err != nil {
		return wasmsched.PermitVerdict{}, err
	}
	if placed < p.size {
		return wasmsched.Wait(30 * time.Second), nil
	}
	for _, w := range wasmsched.Waiting.Pods() {
		if w.Labels[p.label] == gang {
			wasmsched.Waiting.Allow(w.UID)
		}
	}
	return wasmsched.Allow(), nil
}

func init() { wasmsched.Register("{{name}}", "0.1.0", &plugin{}) }

func main() {}
