#!/bin/sh
# readiness probe for the node agent
exec wget -q -O- http://127.0.0.1:13133/ >/dev/null
