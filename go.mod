module github.com/tailscope/tailscope

go 1.26.8

require (
	github.com/klauspost/compress v1.20.4
	go.yaml.in/yaml/v3 v3.0.6
)

require github.com/spf13/pflag v1.1.0
