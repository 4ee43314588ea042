// {{name}}: scores each node by a numeric label (args {"label": ...},
// default "score"), clamped to 0..100; nodes without it score 0.
package main

import "github.com/wasmsched/wasmsched/plugins/sdk/go/wasmsched"

type plugin struct{ label string }

func (p *plugin) Configure(args wasmsched.Args) (err error) {
	p.label, err = args.String("label", "score")
	return err
}

func (p *plugin) Score(_ wasmsched.Pod, nodes wasmsched.Nodes) ([]int64, error) {
	values := nodes.LabelNumbers(p.label)
	scores := make([]int64, len(values))
	for i, v := range values {
		if v.Ok {
			scores[i] = int64(min(max(v.Value, 0), 100))
		}
	}
	return scores, nil
}

func init() { wasmsched.Register("{{name}}", "0.1.0", &plugin{}) }

func main() {}
