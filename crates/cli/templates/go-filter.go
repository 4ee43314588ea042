// {{name}}: rejects nodes that lack a label (args {"label": ...}, default
// "wasmsched.io/allowed").
package main

import "github.com/wasmsched/wasmsched/plugins/sdk/go/wasmsched"

type plugin struct{ label string }

func (p *plugin) Configure(args wasmsched.Args) (err error) {
	p.label, err = args.String("label", "wasmsched.io/allowed")
	return err
}

func (p *plugin) Filter(_ wasmsched.Pod, nodes wasmsched.Nodes) ([]wasmsched.Rejection, error) {
	reason := "node(s) had no label " + p.label
	var rejected []wasmsched.Rejection
	for i, v := range nodes.LabelValues(p.label) {
		if !v.Ok {
			rejected = append(rejected, wasmsched.Reject(i, reason))
		}
	}
	return rejected, nil
}

func init() { wasmsched.Register("{{name}}", "0.1.0", &plugin{}) }

func main() {}
