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
CREATE TABLE `deployment_traffic_minutes` (
	`deployment_id` text NOT NULL,
	`minute` integer NOT NULL,
	`requests` integer NOT NULL,
	`client_errors` integer NOT NULL,
	`server_errors` integer NOT NULL,
	`le_10` integer NOT NULL,
	`le_50` integer NOT NULL,
	`le_100` integer NOT NULL,
	`le_250` integer NOT NULL,
	`le_500` integer NOT NULL,
	`le_1000` integer NOT NULL,
	`le_2500` integer NOT NULL,
	`le_10000` integer NOT NULL,
	`over` integer NOT NULL,
	PRIMARY KEY(`deployment_id`, `minute`),
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