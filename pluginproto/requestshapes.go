package pluginproto

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
}
