CREATE TABLE `deployment_replica_health` (
	`deployment_id` text NOT NULL,
	`replica` text NOT NULL,
	`healthy` integer NOT NULL,
	`ejected` integer NOT NULL,
	`streak` integer NOT NULL,
	`reason` text,
	`detail` text,
	`checked_at` text NOT NULL,
	PRIMARY KEY(`deployment_id`, `replica`),
	FOREIGN KEY (`deployment_id`) REFERENCES `deployments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `rate_limit_buckets` (
	`deployment_id` text NOT NULL,
	`caller` text NOT NULL,
	`tokens` real NOT NULL,
	`granted` real NOT NULL,
	`refilled_at` real NOT NULL,
	PRIMARY KEY(`deployment_id`, `caller`),
	FOREIGN KEY (`deployment_id`) REFERENCES `deployments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `deployments` ADD `upstreams` text;--> statement-breakpoint
ALTER TABLE `deployments` ADD `affinity` text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE `deployments` ADD `retries` integer;--> statement-breakpoint
ALTER TABLE `deployments` ADD `max_concurrent` integer;--> statement-breakpoint
ALTER TABLE `deployments` ADD `queue_timeout_ms` integer;--> statement-breakpoint
ALTER TABLE `deployments` ADD `rate_limit` text;