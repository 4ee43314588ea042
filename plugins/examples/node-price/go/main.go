// node-price (Go): prefer the node with the lowest price, read from a node
// annotation (key configurable). Nodes without a valid price score 0; the
// cheapest scores 100, the dearest 0, the others in between.
// The twin of ../rust/src/lib.rs.
//
// Args: {"annotation": "price"} (the default).
package main

import (
	"errors"
	"math"

	"github.com/wasmsched/wasmsched/plugins/sdk/go/wasmsched"
)

// noPrice is the raw score of a node without a price.
const noPrice = -1

type nodePrice struct{ annotation string }

func (p *nodePrice) Configure(args wasmsched.Args) (err error) {
	if p.annotation, err = args.String("annotation", "price"); err != nil {
		return err
	}
	if p.annotation == "" {
		return errors.New("args.annotation: must not be empty")
	}
	return nil
}

// Score: the price in thousandths (a price of 0.25 is 250), from one host
// call for the whole batch with the prices already parsed.
func (p *nodePrice) Score(_ wasmsched.Pod, nodes wasmsched.Nodes) ([]int64, error) {
	prices := nodes.AnnotationNumbers(p.annotation)
	scores := make([]int64, len(prices))
	for i, price := range prices {
		if price.Ok && price.Value >= 0 {
			scores[i] = int64(math.Round(price.Value * 1000))
		} else {
			scores[i] = noPrice
		}
	}
	return scores, nil
}

// NormalizeScore: cheapest -> 100, dearest -> 0; no price -> 0.
func (p *nodePrice) NormalizeScore(_ wasmsched.Pod, scores []int64) ([]int64, error) {
	lo, hi, any := int64(0), int64(0), false
	for _, s := range scores {
		if s == noPrice {
			continue
		}
		if !any || s < lo {
			lo = s
		}
		if !any || s > hi {
			hi = s
		}
		any = true
	}
	for i, s := range scores {
		switch {
		case !any || s == noPrice:
			scores[i] = 0
		case hi == lo:
			scores[i] = 100
		default:
			scores[i] = 100 - (s-lo)*100/(hi-lo)
		}
	}
	return scores, nil
}

func init() { wasmsched.Register("node-price", "0.1.0", &nodePrice{}) }

func main() {}
