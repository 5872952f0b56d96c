// Command riskapi is the risk-analytics service and its operator command line: serve the
// API, create accounts and keys, migrate the store. See `riskapi help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		var usage *usageError
		if errors.As(err, &usage) {
			fmt.Fprintln(os.Stderr, "riskapi:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "riskapi:", err)
		os.Exit(1)
	}
}
