// Command wrkfloor is the floor scripts/wrk-overhead.sh measures riskapi against: a bare
// net/http server that answers every request with a JSON object of the shape and size of
// GET /v1/account's envelope (about 700 bytes), encoded with encoding/json each time. What
// riskapi serves above it is what its middleware (ids, routing, authentication, rate limits,
// envelope, metrics, access log) costs.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"strconv"
	"time"

	"riskapi/internal/httpapi"
	"riskapi/internal/store"
)

type account struct {
	httpapi.AccountObject `json:",inline"`
	Livemode              bool                 `json:"livemode"`
	APIKey                httpapi.APIKeyObject `json:"api_key"`
}

type envelope struct {
	Success  bool    `json:"success"`
	Data     account `json:"data"`
	Metadata struct {
		RequestID        string `json:"request_id"`
		Timestamp        string `json:"timestamp"`
		ProcessingTimeMS int64  `json:"processing_time_ms"`
	} `json:"metadata"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "listen address")
	flag.Parse()
	now := time.Now()
	data := account{
		AccountObject: httpapi.NewAccountObject(store.Account{ID: "acct_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4", Name: "Bench",
			Email: "bench@example.test", Plan: store.PlanEnterprise, Region: store.RegionDefault, CreatedAt: now}),
		Livemode: true,
		APIKey: httpapi.NewAPIKeyObject(store.APIKey{ID: "key_4Tn8Qw2Ez6Ry1Ui5Op9As3Df7", Type: store.KeyLive,
			Mode: store.ModeLive, Scopes: []string{"drift:read", "drift:write", "usage:read"}, CreatedAt: now}),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env := envelope{Success: true, Data: data}
		env.Metadata.RequestID = "req_7hQm2cXz9Lk3Wp5Rt8Vy1Bn4"
		env.Metadata.Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
		body, err := json.Marshal(env)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	})
	log.Fatal(http.ListenAndServe(*addr, handler))
}
