// Command compression runs gRPC's four compression interop cases with grpc-go
// (doc/interop-test-descriptions.md: client_compressed_unary, server_compressed_unary,
// client_compressed_streaming, server_compressed_streaming). grpc-go's own interop
// client and server binaries have neither these cases nor a gzip codec, so this
// peer imports grpc-go's encoding/gzip and drives them itself.
//
//	compression -server_host=127.0.0.1 -server_port=P -use_tls=false -test_case=CASE
//	    runs one case as the client (the flags of grpc-go's interop client).
//	compression -mode=server -port=P
//	    serves grpc.testing.TestService: grpc-go's interop.NewTestServer, plus the
//	    checks of expect_compressed and the replies response_compressed asks for.
//
// Whether a message came compressed is seen per message through grpc-go's stats
// handler (InPayload: CompressedLength differs from Length). grpc-go compresses a
// call as a whole (grpc.UseCompressor, grpc.SetSendCompressor), not one message of a
// stream and not the next, so where the spec wants a stream's second message
// uncompressed, it goes compressed and is not checked; every other assertion is the
// spec's.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// seen records, per call, whether each received message was compressed.
type seen struct {
	mu         sync.Mutex
	compressed []bool
}

func (s *seen) add(c bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.compressed = append(s.compressed, c)
}

// last is whether the latest received message was compressed.
func (s *seen) last() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.compressed) > 0 && s.compressed[len(s.compressed)-1]
}

func (s *seen) all() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.compressed...)
}

type seenKey struct{}

func seenIn(ctx context.Context) *seen {
	s, _ := ctx.Value(seenKey{}).(*seen)
	return s
}

// watch is a stats handler that fills the call's seen.
type watch struct{}

func (watch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	if seenIn(ctx) != nil {
		return ctx
	}
	return context.WithValue(ctx, seenKey{}, &seen{})
}

func (watch) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if in, ok := s.(*stats.InPayload); ok {
		if w := seenIn(ctx); w != nil {
			w.add(in.CompressedLength != in.Length)
		}
	}
}

func (watch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (watch) HandleConn(context.Context, stats.ConnStats)                       {}

// server is grpc-go's interop server with the compression checks.
type server struct {
	testgrpc.TestServiceServer
}

func notCompressed() error {
	return status.Error(codes.InvalidArgument, "expected a compressed request message (expect_compressed)")
}

func (s server) UnaryCall(ctx context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if in.GetExpectCompressed().GetValue() && !seenIn(ctx).last() {
		return nil, notCompressed()
	}
	// grpc-go answers with the request's compressor unless told otherwise.
	name := "identity"
	if in.GetResponseCompressed().GetValue() {
		name = gzip.Name
	}
	if err := grpc.SetSendCompressor(ctx, name); err != nil {
		return nil, status.Errorf(codes.Internal, "%v", err)
	}
	return s.TestServiceServer.UnaryCall(ctx, in)
}

// checkedInput checks expect_compressed on each request of a StreamingInputCall.
type checkedInput struct {
	testgrpc.TestService_StreamingInputCallServer
}

func (c checkedInput) Recv() (*testpb.StreamingInputCallRequest, error) {
	m, err := c.TestService_StreamingInputCallServer.Recv()
	if err == nil && m.GetExpectCompressed().GetValue() && !seenIn(c.Context()).last() {
		return nil, notCompressed()
	}
	return m, err
}

func (s server) StreamingInputCall(stream testgrpc.TestService_StreamingInputCallServer) error {
	return s.TestServiceServer.StreamingInputCall(checkedInput{stream})
}

func (s server) StreamingOutputCall(in *testpb.StreamingOutputCallRequest, stream testgrpc.TestService_StreamingOutputCallServer) error {
	name := "identity"
	for _, p := range in.GetResponseParameters() {
		if p.GetCompressed().GetValue() {
			name = gzip.Name
		}
	}
	if err := grpc.SetSendCompressor(stream.Context(), name); err != nil {
		return status.Errorf(codes.Internal, "%v", err)
	}
	return s.TestServiceServer.StreamingOutputCall(in, stream)
}

func serve(port int) error {
	lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	s := grpc.NewServer(grpc.StatsHandler(watch{}))
	testgrpc.RegisterTestServiceServer(s, server{interop.NewTestServer()})
	return s.Serve(lis)
}

func payload(size int) *testpb.Payload {
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, size)}
}

func yes(v bool) *testpb.BoolValue { return &testpb.BoolValue{Value: v} }

func wantSize(p *testpb.Payload, size int) error {
	if p.GetType() != testpb.PayloadType_COMPRESSABLE || len(p.GetBody()) != size {
		return fmt.Errorf("reply of type %v and %d bytes, want COMPRESSABLE and %d", p.GetType(), len(p.GetBody()), size)
	}
	return nil
}

func wantCode(err error, code codes.Code) error {
	if status.Code(err) != code {
		return fmt.Errorf("status %v (%v), want %v", status.Code(err), err, code)
	}
	return nil
}

// unary makes one UnaryCall with its own seen, and returns whether its reply came
// compressed.
func unary(ctx context.Context, tc testgrpc.TestServiceClient, req *testpb.SimpleRequest, opts ...grpc.CallOption) (*testpb.SimpleResponse, bool, error) {
	w := &seen{}
	reply, err := tc.UnaryCall(context.WithValue(ctx, seenKey{}, w), req, opts...)
	return reply, w.last(), err
}

func largeRequest() *testpb.SimpleRequest {
	return &testpb.SimpleRequest{ResponseType: testpb.PayloadType_COMPRESSABLE, ResponseSize: 314159, Payload: payload(271828)}
}

func runCase(ctx context.Context, tc testgrpc.TestServiceClient, name string) error {
	compressed := grpc.UseCompressor(gzip.Name)
	switch name {
	case "client_compressed_unary":
		// The probe: a server that checks expect_compressed refuses an uncompressed one.
		req := largeRequest()
		req.ExpectCompressed = yes(true)
		if _, _, err := unary(ctx, tc, req); wantCode(err, codes.InvalidArgument) != nil {
			return fmt.Errorf("probe: %v", wantCode(err, codes.InvalidArgument))
		}
		reply, _, err := unary(ctx, tc, req, compressed)
		if err != nil {
			return fmt.Errorf("compressed request: %v", err)
		}
		if err := wantSize(reply.GetPayload(), 314159); err != nil {
			return err
		}
		req.ExpectCompressed = yes(false)
		reply, _, err = unary(ctx, tc, req)
		if err != nil {
			return fmt.Errorf("uncompressed request: %v", err)
		}
		return wantSize(reply.GetPayload(), 314159)
	case "server_compressed_unary":
		for _, want := range []bool{true, false} {
			req := largeRequest()
			req.ResponseCompressed = yes(want)
			reply, got, err := unary(ctx, tc, req)
			if err != nil {
				return fmt.Errorf("response_compressed=%v: %v", want, err)
			}
			if got != want {
				return fmt.Errorf("response_compressed=%v, but the reply came compressed=%v", want, got)
			}
			if err := wantSize(reply.GetPayload(), 314159); err != nil {
				return err
			}
		}
		return nil
	case "client_compressed_streaming":
		probe, err := tc.StreamingInputCall(ctx)
		if err != nil {
			return err
		}
		if err := probe.Send(&testpb.StreamingInputCallRequest{ExpectCompressed: yes(true), Payload: payload(27182)}); err != nil && err != io.EOF {
			return fmt.Errorf("probe send: %v", err)
		}
		if _, err := probe.CloseAndRecv(); wantCode(err, codes.InvalidArgument) != nil {
			return fmt.Errorf("probe: %v", wantCode(err, codes.InvalidArgument))
		}
		stream, err := tc.StreamingInputCall(ctx, compressed)
		if err != nil {
			return err
		}
		for i, r := range []*testpb.StreamingInputCallRequest{
			{ExpectCompressed: yes(true), Payload: payload(27182)},
			{ExpectCompressed: yes(false), Payload: payload(45904)},
		} {
			if err := stream.Send(r); err != nil {
				return fmt.Errorf("send %d: %v", i, err)
			}
		}
		reply, err := stream.CloseAndRecv()
		if err != nil {
			return err
		}
		if reply.GetAggregatedPayloadSize() != 73086 {
			return fmt.Errorf("aggregated payload size %d, want 73086", reply.GetAggregatedPayloadSize())
		}
		return nil
	case "server_compressed_streaming":
		w := &seen{}
		sizes := []int{31415, 92653}
		stream, err := tc.StreamingOutputCall(context.WithValue(ctx, seenKey{}, w), &testpb.StreamingOutputCallRequest{
			ResponseType: testpb.PayloadType_COMPRESSABLE,
			ResponseParameters: []*testpb.ResponseParameters{
				{Compressed: yes(true), Size: int32(sizes[0])},
				{Compressed: yes(false), Size: int32(sizes[1])},
			},
		})
		if err != nil {
			return err
		}
		for i, size := range sizes {
			reply, err := stream.Recv()
			if err != nil {
				return fmt.Errorf("reply %d: %v", i, err)
			}
			if err := wantSize(reply.GetPayload(), size); err != nil {
				return err
			}
		}
		if _, err := stream.Recv(); err != io.EOF {
			return fmt.Errorf("after two replies: %v, want the end", err)
		}
		if got := w.all(); len(got) != 2 || !got[0] {
			return fmt.Errorf("the first reply came uncompressed (compressed flags %v)", got)
		}
		return nil
	}
	return fmt.Errorf("unknown test case %q", name)
}

func main() {
	mode := flag.String("mode", "client", "client or server")
	port := flag.Int("port", 0, "server: the port to listen on (127.0.0.1)")
	host := flag.String("server_host", "127.0.0.1", "client: the server's host")
	serverPort := flag.Int("server_port", 0, "client: the server's port")
	useTLS := flag.Bool("use_tls", false, "TLS is not supported")
	testCase := flag.String("test_case", "", "client: the case to run")
	flag.Parse()
	if *useTLS {
		fmt.Fprintln(os.Stderr, "-use_tls=true is not supported")
		os.Exit(2)
	}
	if *mode == "server" {
		if err := serve(*port); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	conn, err := grpc.NewClient(fmt.Sprintf("%s:%d", *host, *serverPort),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithStatsHandler(watch{}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := runCase(ctx, testgrpc.NewTestServiceClient(conn), *testCase); err != nil {
		fmt.Fprintf(os.Stderr, "%s: FAILED: %v\n", *testCase, err)
		os.Exit(1)
	}
	fmt.Printf("%s: passed\n", *testCase)
}
