"""The gRPC endpoint of RocketMQ 5.x clients (`serve --grpc-port`), in the optional extra `[grpc]`: imported only
when the endpoint is enabled, so that a broker without it starts and idles as before."""
