CREATE TABLE `cluster_nodes` (
	`node_id` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`heartbeat_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `jobs` ADD `owner_node` text;