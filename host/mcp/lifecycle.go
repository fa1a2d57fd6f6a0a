package mcp

import (
	"encoding/json"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// initParams are the params of initialize the server reads.
type initParams struct {
	version string     // protocolVersion as requested
	caps    clientCaps // what capabilities declared
	client  []any      // clientInfo's name and version, for the log
	info    string     // clientInfo as "name/version", for Options.OnCallEnd
}

func (ip initParams) decode(_ string, raw []byte) (initParams, *jsonrpc.Error) {
	var p struct {
		ProtocolVersion *string          `json:"protocolVersion"`
		Capabilities    *json.RawMessage `json:"capabilities"`
		ClientInfo      *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if raw == nil || json.Unmarshal(raw, &p) != nil || p.ProtocolVersion == nil {
		return ip, jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			"invalid params: initialize needs protocolVersion (a string), capabilities (an object) and clientInfo (an object with name and version)")
	}
	ip.version = *p.ProtocolVersion
	if p.Capabilities != nil {
		if !jsonrpc.IsObject(*p.Capabilities) {
			return ip, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: capabilities must be an object")
		}
		ip.caps = parseClientCaps(*p.Capabilities)
	} else {
		ip.caps.raw = emptyObject
	}
	if p.ClientInfo != nil {
		ip.client = []any{"client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version}
		ip.info = clientName(p.ClientInfo.Name, p.ClientInfo.Version)
	}
	return ip, nil
}

// initialize negotiates the version: the one requested if the server
// speaks it, the latest otherwise.
func (s *Session) initialize(in incoming, p initParams) func() {
	if !s.life.state.CompareAndSwap(stateNew, stateInitializing) {
		s.respondError(in.rp, in.msg.ID, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "invalid request: session already initialized"))
		return nil
	}
	v := vLatest
	for i, sv := range versions {
		if sv == p.version {
			v = i
		}
	}
	s.life.version.Store(int32(v))
	s.life.caps = p.caps
	s.life.client = p.info
	log := append([]any{"requested", p.version, "negotiated", versions[v]}, p.client...)
	if p.caps.sampling {
		log = append(log, "sampling", true, "sampling_tools", p.caps.samplingTools)
	}
	s.srv.log.Info("session initialized", log...)
	s.respondResult(in.rp, in.msg.ID, s.srv.initResult[v])
	s.life.state.Store(stateInitialized)
	return nil
}

func (s *Session) ping(in incoming, _ noParams) func() {
	s.respondResult(in.rp, in.msg.ID, []byte("{}"))
	return nil
}

// initialized handles notifications/initialized: the session is ready,
// and a client that can sample may now be asked.
func (s *Session) initialized(noParams) {
	if !s.life.state.CompareAndSwap(stateInitialized, stateReady) {
		s.srv.log.Debug("ignored notifications/initialized", "state", s.life.state.Load())
	} else if s.life.caps.sampling {
		s.srv.addSampler(s)
	}
}

// clientCaps are what the client declared in initialize that the server
// uses.
type clientCaps struct {
	// raw is the capabilities object as the client sent it (compact, owned),
	// {} when it sent none: providers read it (tool.Call's
	// ClientCapabilities).
	raw           json.RawMessage
	sampling      bool // capabilities.sampling is an object
	samplingTools bool // capabilities.sampling.tools is an object
	elicitForm    bool // elicitation.form, or an elicitation object naming no mode (form then)
	elicitURL     bool // elicitation.url is an object
	roots         bool // capabilities.roots is an object
	tasks         bool // extensions["io.modelcontextprotocol/tasks"] is an object
}

var emptyObject = json.RawMessage(`{}`)

// parseClientCaps reads the capabilities object of initialize.
func parseClientCaps(raw []byte) clientCaps {
	var c clientCaps
	if b, ok := jsonrpc.AppendJSON(nil, raw); ok {
		c.raw = b
	} else {
		c.raw = emptyObject
	}
	sampling := jsonrpc.Member(raw, "sampling")
	if jsonrpc.IsObject(sampling) {
		c.sampling = true
		c.samplingTools = jsonrpc.IsObject(jsonrpc.Member(sampling, "tools"))
	}
	if e := jsonrpc.Member(raw, "elicitation"); jsonrpc.IsObject(e) {
		form, url := jsonrpc.Member(e, "form"), jsonrpc.Member(e, "url")
		// An empty elicitation object (2025-06-18's only form) means form.
		c.elicitForm = jsonrpc.IsObject(form) || (form == nil && url == nil)
		c.elicitURL = jsonrpc.IsObject(url)
	}
	c.roots = jsonrpc.IsObject(jsonrpc.Member(raw, "roots"))
	c.tasks = jsonrpc.IsObject(jsonrpc.Member(jsonrpc.Member(raw, "extensions"), extTasks))
	return c
}
