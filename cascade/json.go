package cascade

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// networkJSON is a Network as JSON carries it.
type networkJSON struct {
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges"`
}

// UnmarshalJSONFrom decodes a network and records that it was sent; JSON null counts as not
// sent, as an absent member does. Unknown members and wrong types are reported with their
// paths as for any other value.
func (n *Network) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		return err
	}
	var w networkJSON
	if err := json.UnmarshalDecode(dec, &w); err != nil {
		return err
	}
	*n = Network{Nodes: w.Nodes, Edges: w.Edges, decoded: true}
	return nil
}
