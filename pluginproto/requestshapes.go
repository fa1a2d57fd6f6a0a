package pluginproto

import "slices"

// Offers says what a plugin offers besides tools. A host learns it from
// Describe (host/pluginclient's Description.Offers) and calls nothing that is not offered; a
// plugin built with this package offers what it registered, and what it
// declared with Plugin.Offer.
type Offers struct {
	// Resources: resources and resource templates (ListResources,
	// ListResourceTemplates, ReadResource).
	Resources bool
	// ResourceSubscriptions: SubscribeResource, and Change.Updated.
	ResourceSubscriptions bool
	// Prompts: ListPrompts and GetPrompt.
	Prompts bool
	// Completions: Complete.
	Completions bool
	// Hooks are the hook points the plugin serves on its Hooks stream
	// (AddHook), in the order of a request; nil: the plugin is no hook.
	Hooks []HookPoint `json:",omitempty"`
}

// Equal reports whether o and other say the same (Offers holds a list,
// so == does not compare it).
func (o Offers) Equal(other Offers) bool {
	return o.Resources == other.Resources && o.ResourceSubscriptions == other.ResourceSubscriptions &&
		o.Prompts == other.Prompts && o.Completions == other.Completions && slices.Equal(o.Hooks, other.Hooks)
}
