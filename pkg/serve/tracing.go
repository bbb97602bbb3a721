package serve

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/sealane/sealane/pkg/tracing"
)

// tracingFlushTimeout bounds how long a process exiting waits to flush its spans.
const tracingFlushTimeout = 5 * time.Second

// StartTracing sets up the process's tracing (pkg/tracing: OTEL_* and SEALANE_TRACES_FILE) with
// service.name "sealane-<service>" and returns the function that flushes it on exit. Tracing
// that cannot be set up is reported on stderr and stays off: it never stops a deploy.
func StartTracing(ctx context.Context, service string) (flush func()) {
	shutdown, err := tracing.Setup(ctx, tracing.Options{ServiceName: "sealane-" + service})
	if err != nil {
		fmt.Fprintf(os.Stderr, "sealane-%s: tracing off: %v\n", service, err)
		return func() {}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "sealane-%s: %v\n", service, err)
		}
	}
}
