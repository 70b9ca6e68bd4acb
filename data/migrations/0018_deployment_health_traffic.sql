CREATE TABLE `deployment_health` (
	`deployment_id` text PRIMARY KEY NOT NULL,
	`healthy` integer NOT NULL,
	`reason` text,
	`detail` text,
	`checked_at` text NOT NULL,
	FOREIGN KEY (`deployment_id`) REFERENCES `deployments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `deployment_traffic` (
	`deployment_id` text PRIMARY KEY NOT NULL,
	`requests` integer NOT NULL,
	`last_request_at` text NOT NULL,
	FOREIGN KEY (`deployment_id`) REFERENCES `deployments`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `deployments` ADD `health_path` text;