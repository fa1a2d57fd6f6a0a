package registry

// The server.json model of schema 2025-12-11, as the official registry's
// Go module (github.com/modelcontextprotocol/registry v1.8.9,
// pkg/api/v0/types.go and pkg/model/types.go) defines it: the members
// plughost reads. A document is validated against the official schema
// (Validate) before it is read into these.

// Server is one server.json document.
type Server struct {
	Schema      string      `json:"$schema"`
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Title       string      `json:"title,omitempty"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Repository  *Repository `json:"repository,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Remotes     []Transport `json:"remotes,omitempty"`
}

// Repository is where the server's source is.
type Repository struct {
	URL    string `json:"url,omitempty"`
	Source string `json:"source,omitempty"`
}

// The registry types of a package (Package.RegistryType).
const (
	TypeNPM   = "npm"
	TypePyPI  = "pypi"
	TypeOCI   = "oci"
	TypeNuGet = "nuget"
	TypeMCPB  = "mcpb"
)

// The transports (Transport.Type); TypeRemote stands for either remote
// one in --type.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "streamable-http"
	TransportSSE   = "sse"
	TypeRemote     = "remote"
)

// Package is one way to run the server locally.
type Package struct {
	RegistryType         string     `json:"registryType"`
	RegistryBaseURL      string     `json:"registryBaseUrl,omitempty"`
	Identifier           string     `json:"identifier"`
	Version              string     `json:"version,omitempty"`
	FileSHA256           string     `json:"fileSha256,omitempty"`
	RuntimeHint          string     `json:"runtimeHint,omitempty"`
	Transport            Transport  `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments,omitempty"`
	PackageArguments     []Argument `json:"packageArguments,omitempty"`
	EnvironmentVariables []KeyValue `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport, or a remote: its type, and for the
// HTTP ones its url (with {variables}) and headers.
type Transport struct {
	Type      string           `json:"type"`
	URL       string           `json:"url,omitempty"`
	Headers   []KeyValue       `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the server needs: given (Value, a template of
// {variables}), or to ask for.
type Input struct {
	Description string   `json:"description,omitempty"`
	IsRequired  bool     `json:"isRequired,omitempty"`
	Format      string   `json:"format,omitempty"` // string, number, boolean, filepath
	Value       string   `json:"value,omitempty"`
	IsSecret    bool     `json:"isSecret,omitempty"`
	Default     string   `json:"default,omitempty"`
	Placeholder string   `json:"placeholder,omitempty"`
	Choices     []string `json:"choices,omitempty"`

	// Variables fill the {names} of Value.
	Variables map[string]Input `json:"variables,omitempty"`
}

// KeyValue is an environment variable or a header.
type KeyValue struct {
	Input
	Name string `json:"name"`
}

// Argument is a command-line argument: positional (Value, or what
// ValueHint names) or named (Name, "--flag", with a value or alone).
type Argument struct {
	Input
	Type       string `json:"type"` // positional or named
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
}

// Entry is a server.json with what the registry says of it.
type Entry struct {
	Server Server
	// Raw is the document as the registry gave it.
	Raw []byte
	// Status is the registry's status (active, deprecated, deleted); ""
	// when it says none (a file).
	Status string
	// IsLatest is the registry's word that it is the latest version;
	// true for a file's newest document.
	IsLatest bool
}
