package httpapi

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"testing"

	"github.com/go-json-experiment/json"

	"riskapi/drift"
)

// analyzeRequestWithoutBulk is analyzeDriftRequest decoded by json.Unmarshal alone, as every
// Drift body was before the bulk decoder: its decodeBulk does not match bulkDecoder.
type analyzeRequestWithoutBulk struct {
	analyzeDriftRequest
}

func (analyzeRequestWithoutBulk) decodeBulk() {}

// Bodies of POST /v1/drift/analyze with an error at the start, the middle or the end of the
// events, or in another member, get the same answer whether the events are decoded on one
// goroutine or several as they got from json.Unmarshal alone, and valid bodies decode to
// the same request.
func TestWorkersDriftAnswersAsBefore(t *testing.T) {
	in, _ := drift.Generate(drift.ScenarioShadow, 1, drift.GenParams{Events: 1600})
	valid := []byte(driftBody(t, "agent_1", in.Events, `"principal_id": "user_1"`))
	at := func(frac float64) int { // the start of an event near frac of the way through
		i := int(frac * float64(len(valid)))
		return i + bytes.Index(valid[i:], []byte(`{"id":`))
	}
	splice := func(pos int, cut int, insert string) []byte {
		return append(append(append([]byte(nil), valid[:pos]...), insert...), valid[pos+cut:]...)
	}
	bodies := map[string][]byte{"valid": valid}
	for name, frac := range map[string]float64{"first": 0, "middle": 0.5, "last": 0.999} {
		pos := at(frac)
		bodies[name+" unknown member"] = splice(pos+1, 0, `"actoin": "buy", `)
		bodies[name+" wrong type"] = splice(pos+1, 0, `"principal_value": "12", `)
		bodies[name+" bad timestamp"] = splice(pos+1, 0, `"timestamp": "yesterday", `)
		bodies[name+" duplicate"] = splice(pos+1, 0, `"action": "a", "action": "b", `)
		bodies[name+" malformed"] = splice(pos+1, 0, `"action" "a", `)
		bodies[name+" empty action"] = splice(pos+1, 0, `"action": "", `)
		bodies[name+" missing beneficiary value"] = splice(pos+1, 0, `"beneficiaries": [{"party": "p"}], `)
		bodies[name+" null"] = splice(pos+1, 0, `"instructed_by": null, `)
		bodies[name+" malformed and unknown later"] = splice(pos+1, 0, `"action" "a", "actoin": 1, `)
	}
	bodies["truncated"] = valid[:len(valid)/2]
	bodies["unknown top-level member after events"] = append(bytes.TrimSuffix(bytes.Clone(valid), []byte("}")), `, "agnet": 1}`...)
	bodies["bad agent_id after bad events"] = append(splice(at(0.5)+1, 0, `"actoin": 1, `)[:len(valid)+len(`"actoin": 1, `)-1], `, "agent_id": 5}`...)
	for name, body := range bodies {
		var plain analyzeRequestWithoutBulk
		want := decodeJSONContext(context.Background(), body, &plain)
		for _, procs := range []int{1, 3} { // 1,600 events: 3 workers at most
			prev := runtime.GOMAXPROCS(procs)
			var bulk analyzeDriftRequest
			got := decodeJSONContext(context.Background(), body, &bulk)
			runtime.GOMAXPROCS(prev)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("GOMAXPROCS=%d, %s: answer %v, json.Unmarshal alone %v", procs, name, got, want)
			}
			if got == nil && !reflect.DeepEqual(bulk.Input, plain.Input) {
				t.Errorf("GOMAXPROCS=%d, %s: decoded differently from json.Unmarshal", procs, name)
			}
		}
	}
	var decoded analyzeDriftRequest
	if !decoded.decodeBulk(context.Background(), valid) {
		t.Fatal("the bulk decoder declined a valid body")
	}
	var batch ingestDriftEventsRequest
	raw, _ := json.Marshal(drift.EventBatch{AgentID: "agent_1", Events: in.Events[:100]})
	if !batch.decodeBulk(context.Background(), raw) || len(batch.Events) != 100 {
		t.Fatal("the bulk decoder declined a valid batch")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var abandoned analyzeDriftRequest
	if e := decodeJSONContext(ctx, valid, &abandoned); e == nil || e.Code != CodeServiceUnavailable || abandoned.Events != nil {
		t.Fatalf("a request whose client is gone was decoded: %v", e)
	}
}
